package bwrap

import "testing"

// TestSeccompFilterArches: the filter assembles for the platforms it
// knows, and a platform it does not know is an error at New, not a
// sandbox that silently allows nested user namespaces.
func TestSeccompFilterArches(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		f, err := seccompFilter(arch)
		if err != nil || len(f) == 0 || len(f)%8 != 0 {
			t.Errorf("%s: %d bytes, %v", arch, len(f), err)
		}
	}
	if _, err := seccompFilter("riscv64"); err == nil {
		t.Error("riscv64: no error")
	}
}
