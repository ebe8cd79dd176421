package llmstages

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestPromptOverBudgetIsNotSent: a stage whose assembled prompt is larger
// than Options.MaxPromptBytes fails before any call, with an error that
// names the budget and that the executor treats as permanent; a prompt
// within the budget, or any prompt with no budget, is sent.
func TestPromptOverBudgetIsNotSent(t *testing.T) {
	t.Parallel()
	big := task
	big.Prompt = strings.Repeat("sum the quantity column. ", 300<<10/25) // about 300 KB
	reply := map[string]string{"plan": `{"description":"d","approach":"a"}`}
	tests := []struct {
		name    string
		opts    Config
		task    messages.TaskSpec
		wantErr string // "" means the call is made
	}{
		{"300 KB over the default budget", Config{}, big, "over the 256 KiB budget (llmstages.Config.MaxPromptBytes)"},
		{"small budget", Config{MaxPromptBytes: 1 << 10}, messages.TaskSpec{Prompt: strings.Repeat("x", 2<<10)}, "over the 1 KiB budget"},
		{"within the default budget", Config{}, task, ""},
		{"no budget", Config{MaxPromptBytes: -1}, big, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fc := &fakeClient{replies: reply}
			_, err := newHandlers(t, fc, tc.opts).Handle(context.Background(), command(t, messages.StagePlan, messages.PlanInput{Task: tc.task}))
			calls := len(fc.calls())
			if tc.wantErr == "" {
				if err != nil || calls != 1 {
					t.Fatalf("err %v, %d calls; want the prompt sent once", err, calls)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrPromptTooLarge) {
				t.Fatalf("err = %v; want ErrPromptTooLarge naming %q", err, tc.wantErr)
			}
			if !bus.IsPermanent(err) {
				t.Errorf("err = %v: want a permanent stage failure", err)
			}
			if calls != 0 {
				t.Errorf("%d calls made for a prompt over budget, want none", calls)
			}
		})
	}
}
