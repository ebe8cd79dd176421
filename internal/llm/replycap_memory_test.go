package llm_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
)

// TestFiftyMegabyteReplyAllocatesBoundedMemory: the llm-worker's memory
// under a hostile 50 MB reply is bounded by the 4 MiB reply cap, not by
// the reply (before the cap, such a reply took the worker to 625 MB).
// Everything the call allocates, the fake server's streaming included, is
// counted. Not parallel: TotalAlloc is the process's, and parallel tests
// wait while the sequential ones run.
func TestFiftyMegabyteReplyAllocatesBoundedMemory(t *testing.T) {
	s, c, _ := setup(t, nil, nil)
	s.On("plan", fakellm.Oversized(50<<20))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Structured(t.Context(), planRequest("m"))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, llm.ErrReplyTooLarge) {
		t.Fatalf("err = %v, want ErrReplyTooLarge", err)
	}
	const bound = 32 << 20 // a few times the cap: buffers grow by doubling
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
		t.Errorf("a 50 MB reply allocated %d MiB, want at most %d MiB", alloc>>20, bound>>20)
	} else {
		t.Logf("a 50 MB reply allocated %.1f MiB in all", float64(alloc)/(1<<20))
	}
}
