package sandboxtest

import (
	"strings"
	"testing"
)

// keyringProbe calls the kernel keyring system calls: add_key (into the
// session keyring), keyctl (the session keyring's id) and request_key.
// Each line is "<call> ok" or "<call> refused <errno>".
const keyringProbe = `
import ctypes, errno, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, REQUEST_KEY, KEYCTL = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}[platform.machine()]
KEY_SPEC_SESSION_KEYRING, KEYCTL_GET_KEYRING_ID = -3, 0

def report(call, r):
    print(call, "ok" if r >= 0 else "refused " + errno.errorcode.get(ctypes.get_errno(), "?"))

payload = b"left by one run for the next"
report("add_key", libc.syscall(ADD_KEY, b"user", b"sbxtest", payload, len(payload), KEY_SPEC_SESSION_KEYRING))
report("keyctl", libc.syscall(KEYCTL, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0))
report("request_key", libc.syscall(REQUEST_KEY, b"user", b"sbxtest", None, 0))
`

// testKeyringsRefused: the kernel's keyrings are not namespaced, so what
// one run stores there another could read; the keyring calls are refused
// with EPERM (the process backend's seccomp filter, Docker's default
// profile).
func testKeyringsRefused(t *testing.T, f *fixture) {
	res := f.python(t, keyringProbe, nil)
	if res.ExitCode != 0 {
		t.Fatalf("probe failed: %s", dump(res))
	}
	out := string(res.Stdout)
	for _, call := range []string{"add_key", "keyctl", "request_key"} {
		if !strings.Contains(out, call+" refused EPERM\n") {
			t.Errorf("%s not refused with EPERM:\n%s", call, out)
		}
	}
}
