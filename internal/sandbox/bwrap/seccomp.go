package bwrap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/net/bpf"
)

// The sandbox's seccomp filter refuses nested user namespaces: inside one
// a program is root of its own, and can mount a tmpfs over /usr or open
// the kernel's namespaced attack surface. bubblewrap's --disable-userns
// does this only when bubblewrap makes a user namespace itself, which a
// worker running as root does not (see namespaces), so the filter is
// loaded on every sandbox, through --seccomp.
//
// It returns EPERM for unshare(2) and clone(2) with CLONE_NEWUSER, and
// ENOSYS for clone3(2), whose flags are behind a pointer a filter cannot
// read (glibc then falls back to clone, as Docker's default profile makes
// it do). It also returns EPERM for the kernel keyring calls (add_key,
// keyctl, request_key): keyrings are not namespaced, so a key one run
// stores another could read; Docker's default profile refuses them too.
// Another ABI on the same machine (x32, i386) is refused outright.
// The filter is assembled with golang.org/x/net/bpf, as libseccomp would
// compile it, without cgo.

const (
	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000
	cloneNewUser    = 0x10000000
	x32SyscallBit   = 0x40000000

	// Offsets in struct seccomp_data.
	offNR   = 0
	offArch = 4
	offArg0 = 16 // the low 32 bits of args[0] (little-endian)
)

// seccompArch is the audit architecture and system call numbers of a
// platform the filter knows.
type seccompArch struct {
	audit                  uint32
	unshare, clone, clone3 uint32
	keyrings               [3]uint32 // add_key, request_key, keyctl
	x32                    bool      // syscall numbers with x32SyscallBit are another ABI
}

var seccompArches = map[string]seccompArch{
	"amd64": {audit: 0xc000003e, unshare: 272, clone: 56, clone3: 435, keyrings: [3]uint32{248, 249, 250}, x32: true},
	"arm64": {audit: 0xc00000b7, unshare: 97, clone: 220, clone3: 435, keyrings: [3]uint32{217, 218, 219}},
}

// seccompFilter is the compiled filter, as bubblewrap's --seccomp reads it:
// struct sock_filter entries in native byte order.
func seccompFilter(goarch string) ([]byte, error) {
	a, ok := seccompArches[goarch]
	if !ok {
		return nil, fmt.Errorf("sandbox: no seccomp filter for %s: nested user namespaces cannot be refused", goarch)
	}
	deny := bpf.RetConstant{Val: seccompRetErrno | uint32(syscall.EPERM)}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.audit, SkipTrue: 1},
		deny, // another ABI
		bpf.LoadAbsolute{Off: offNR, Size: 4},
	}
	if a.x32 {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1}, deny)
	}
	for _, nr := range a.keyrings {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, deny)
	}
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.clone3, SkipFalse: 1},
		bpf.RetConstant{Val: seccompRetErrno | uint32(syscall.ENOSYS)},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.unshare, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.clone, SkipTrue: 1},
		bpf.RetConstant{Val: seccompRetAllow},
		bpf.LoadAbsolute{Off: offArg0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: cloneNewUser, SkipFalse: 1},
		deny,
		bpf.RetConstant{Val: seccompRetAllow},
	)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: assemble the seccomp filter: %w", err)
	}
	var buf bytes.Buffer
	for _, ins := range raw {
		_ = binary.Write(&buf, binary.NativeEndian, struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}{ins.Op, ins.Jt, ins.Jf, ins.K})
	}
	return buf.Bytes(), nil
}

// hostSeccompFilter is the filter for the machine the worker runs on.
func hostSeccompFilter() ([]byte, error) { return seccompFilter(runtime.GOARCH) }
