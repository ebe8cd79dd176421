package llm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
)

// TestStructuredReplyCap: a reply body past OpenAIConfig.MaxReplyBytes fails
// the call at once, naming the cap, as a permanent error: one request, no
// retries, no corrections, and memory bounded by the cap (a 50 MB reply is
// never read whole).
func TestStructuredReplyCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cap   int64 // OpenAIConfig.MaxReplyBytes
		reply fakellm.Reply
		want  string
	}{
		{"5 MB reply, default cap", 0, fakellm.Oversized(5 << 20), "model reply larger than 4 MiB"},
		{"50 MB reply, default cap", 0, fakellm.Oversized(50 << 20), "model reply larger than 4 MiB"},
		{"configured cap", 64 << 10, fakellm.Text(strings.Repeat("x", 100<<10)), "model reply larger than 64 KiB"},
		// An error status is retried, but not when its body floods.
		{"oversized error body", 64 << 10, fakellm.Status(503, "").ErrorMessage(strings.Repeat("x", 100<<10)), "model reply larger than 64 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, c, clock := setup(t, nil, func(cfg *llm.OpenAIConfig) { cfg.MaxReplyBytes = tc.cap })
			s.On("plan", tc.reply)
			_, err := c.Structured(t.Context(), planRequest("m"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one naming %q", err, tc.want)
			}
			if !errors.Is(err, llm.ErrReplyTooLarge) || !llm.IsPermanent(err) {
				t.Errorf("err = %v: want ErrReplyTooLarge, classified permanent", err)
			}
			if n, w := len(s.Requests()), len(clock.Waits()); n != 1 || w != 0 {
				t.Errorf("%d requests, %d waits; want 1 and none", n, w)
			}
		})
	}
}

// TestStructuredReplyUnderCap: a reply within a small cap goes through, and
// a negative cap means none.
func TestStructuredReplyUnderCap(t *testing.T) {
	t.Parallel()
	for _, limit := range []int64{16 << 10, -1} {
		s, c, _ := setup(t, nil, func(cfg *llm.OpenAIConfig) { cfg.MaxReplyBytes = limit })
		s.On("plan", fakellm.JSON(testPlan))
		if _, err := c.Structured(t.Context(), planRequest("m")); err != nil {
			t.Errorf("cap %d: %v", limit, err)
		}
	}
	s, c, _ := setup(t, nil, func(cfg *llm.OpenAIConfig) { cfg.MaxReplyBytes = -1 })
	s.On("plan", fakellm.Oversized(5<<20))
	if _, err := c.Structured(t.Context(), planRequest("m")); errors.Is(err, llm.ErrReplyTooLarge) {
		t.Errorf("no cap: %v", err)
	}
}
