package submit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestProgressNumbersRepeatedStages: a stage that runs again in the same
// iteration (a fix re-asked after its verification failed) is told apart
// from the first run, not printed as an identical line.
func TestProgressNumbersRepeatedStages(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	p := newProgress(IO{Stderr: &stderr})
	for seq, st := range []messages.Stage{messages.StageFix, messages.StageFix, messages.StageFix, messages.StageRunTests} {
		p.event(messages.Event{Type: messages.EventStageStarted, Stage: st, Seq: seq, Iteration: 1})
		p.event(messages.Event{Type: messages.EventStageFinished, Stage: st, Seq: seq, Iteration: 1, Outcome: "ok"})
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4:\n%s", len(lines), stderr.String())
	}
	for i, want := range []string{"fix          iteration 1  ok", "fix          iteration 1 try 2  ok", "fix          iteration 1 try 3  ok", "run_tests    iteration 1  ok"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
}
