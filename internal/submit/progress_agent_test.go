package submit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestProgressPrintsToolCalls: each agent tool call is a line with the
// tool, its argument summary (escaped), its verdict and its duration.
func TestProgressPrintsToolCalls(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	p := newProgress(IO{Stderr: &stderr})
	p.event(messages.Event{Type: messages.EventToolCall, Seq: 1, Tool: &messages.ToolCallRecord{Turn: 1, Tool: "bash",
		Arguments: "curl http://h \x1b[2J", Verdict: messages.VerdictDenied, DurationMS: 12}})
	p.event(messages.Event{Type: messages.EventToolCall, Seq: 2}) // no detail: nothing to print
	out := stderr.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "tool bash") || !strings.Contains(out, "denied  12ms") {
		t.Errorf("progress %q", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence from the arguments reached the terminal: %q", out)
	}
}
