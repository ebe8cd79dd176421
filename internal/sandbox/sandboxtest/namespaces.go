package sandboxtest

import (
	"strings"
	"testing"
)

// userNamespaceProbe tries every way a program can make a user namespace
// of its own (where it is root, and can then mount a tmpfs over /usr):
// the unshare command, and the unshare, clone and clone3 system calls.
// Each line is "<way> ok" or "<way> refused <errno>".
const userNamespaceProbe = `
import ctypes, errno, os, platform, struct, subprocess
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
CLONE = {"x86_64": 56, "aarch64": 220}[platform.machine()]
CLONE3 = 435

def report(way, r):
    if r == 0:
        print(way, "ok")
    else:
        print(way, "refused", errno.errorcode.get(ctypes.get_errno(), "?"))

try:
    p = subprocess.run(["unshare", "--user", "--map-root-user", "id", "-u"], capture_output=True, text=True, timeout=30)
    print("unshare-command", "ok uid=" + p.stdout.strip() if p.returncode == 0 else "refused " + p.stderr.strip()[-120:])
except FileNotFoundError:
    print("unshare-command missing")

pid = libc.syscall(CLONE, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
if pid == 0:
    os._exit(0)
if pid > 0:
    os.waitpid(pid, 0)
report("clone", 0 if pid > 0 else -1)

args = struct.pack("8Q", CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0)
pid = libc.syscall(CLONE3, ctypes.create_string_buffer(args), len(args))
if pid == 0:
    os._exit(0)
if pid > 0:
    os.waitpid(pid, 0)
report("clone3", 0 if pid > 0 else -1)

report("unshare", libc.unshare(CLONE_NEWUSER))
`

// testNestedUserNamespaces: generated code cannot become root in a user
// namespace of its own, by any of the ways the probe tries.
func testNestedUserNamespaces(t *testing.T, f *fixture) {
	res := f.python(t, userNamespaceProbe, nil)
	out := string(res.Stdout)
	if res.ExitCode != 0 {
		t.Fatalf("probe failed: %s", dump(res))
	}
	t.Logf("user namespaces:\n%s", strings.TrimSpace(out))
	for _, way := range []string{"unshare-command", "clone", "clone3", "unshare"} {
		if !strings.Contains(out, way+" refused") {
			t.Errorf("%s made a user namespace, or was not tried:\n%s", way, out)
		}
	}
	assertServes(t, f)
}
