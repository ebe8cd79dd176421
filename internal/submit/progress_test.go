package submit

import (
	"bytes"
	"strings"
	"testing"
	"time"

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

// TestProgressTellsQueuedFromRunning: a stage's line has how long it ran,
// from when a worker took it, and how long it waited in its queue before;
// a stage answered from the cache, never announced as started, ran from
// its dispatch.
func TestProgressTellsQueuedFromRunning(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	p := newProgress(IO{Stderr: &stderr})
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	p.event(messages.Event{Type: messages.EventStageQueued, Stage: messages.StageCode, Seq: 1, Time: t0})
	p.event(messages.Event{Type: messages.EventStageQueued, Stage: messages.StageTests, Seq: 2, Time: t0})
	p.event(messages.Event{Type: messages.EventStageStarted, Stage: messages.StageCode, Seq: 1, Time: t0.Add(5 * time.Second)})
	p.event(messages.Event{Type: messages.EventStageFinished, Stage: messages.StageCode, Seq: 1, Outcome: "ok", Time: t0.Add(6 * time.Second)})
	p.event(messages.Event{Type: messages.EventStageFinished, Stage: messages.StageTests, Seq: 2, Outcome: "ok", Cached: true, Time: t0.Add(200 * time.Millisecond)})
	got := stderr.String()
	for _, want := range []string{"code         iteration 0  ok  took 1s (queued 5s)", "tests        iteration 0  ok (cached)  took 200ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lacks %q:\n%s", want, got)
		}
	}
}
