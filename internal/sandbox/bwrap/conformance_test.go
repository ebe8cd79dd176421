package bwrap_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

var _ sandbox.Backend = (*bwrap.Backend)(nil)

// TestConformance runs the conformance suite, escape cases included, on a
// fresh backend per subtest; they share one state dir, so environments are
// built once, as workers on one machine share them.
func TestConformance(t *testing.T) {
	dir := sharedStateDir(t)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Backend {
		return newBackend(t, bwrap.Config{StateDir: dir, DiskQuota: sandboxtest.TestDiskQuota})
	})
}
