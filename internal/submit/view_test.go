package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestViewOfCancelledJob: the human view says who cancelled the job and
// when, lists each stage with its own duration, and leaves the
// conversation to --json.
func TestViewOfCancelledJob(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 23, 0, 5, 0, time.UTC)
	sub := at.Add(-5 * time.Second)
	r := &messages.Result{JobID: "job-1", Status: messages.StatusCancelled, Error: "cancelled by cli:ann@box: wrong data",
		SubmittedAt: sub, FinishedAt: &at, Attempts: 1, LLMCalls: 3,
		Spec:      &messages.JobSpec{Prompt: "Sum the sales."},
		Cancelled: &messages.Cancellation{By: "cli:ann@box", At: at, Reason: "wrong data"},
		Stages: []messages.StageRecord{{Name: messages.StagePlan, DurationMS: 1200, Outcome: "ok"},
			{Name: messages.StageRunTests, Iteration: 1, DurationMS: 2500, Outcome: "1 passed, 1 failed, 0 errors"}},
		ConversationHistory: []messages.ChatMessage{{Role: "user", Content: "SECRET-PROMPT-TEXT"}},
		Solution:            &messages.Solution{Code: "print(1)\n"},
	}
	var out bytes.Buffer
	printView(&out, r, false, nil)
	got := out.String()
	for _, want := range []string{"job job-1: CANCELLED by cli:ann@box at " + at.Local().Format(time.DateTime), "after 5s", "wrong data",
		"task: Sum the sales.", "plan", "1.2s", "run_tests", "2.5s", "1 passed, 1 failed", "submit result job-1"} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SECRET-PROMPT-TEXT") || strings.Contains(got, "print(1)") {
		t.Errorf("status view shows the conversation or the code:\n%s", got)
	}
	out.Reset()
	printView(&out, r, true, nil)
	if !strings.Contains(out.String(), "print(1)") {
		t.Errorf("result view lacks the script:\n%s", out.String())
	}
}

// TestViewOfRunningJob: a running job's view lists the stages in flight.
func TestViewOfRunningJob(t *testing.T) {
	t.Parallel()
	r := &messages.Result{JobID: "job-2", Status: messages.StatusRunning, SubmittedAt: time.Now().Add(-time.Minute)}
	var out bytes.Buffer
	started := time.Now().Add(-time.Second)
	printView(&out, r, false, []client.RunningStage{{Stage: messages.StagePlan, Seq: 5, Iteration: 2, Since: time.Now().Add(-6 * time.Second), StartedAt: &started, Worker: "llm-1"},
		{Stage: messages.StageRunTests, Seq: 6, Iteration: 2, Since: time.Now().Add(-3 * time.Second)}})
	for _, want := range []string{"job job-2: running since", "running now:\n  plan       iteration 2  queued 5s, running for 1s on llm-1\n",
		"  run_tests  iteration 2  queued for 3s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("view lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDetachedSaysHowToGetBack: a command interrupted while it follows a
// job says the job goes on and how to follow or cancel it (exit 130); a
// --local job stops with the command, and the message says so.
func TestDetachedSaysHowToGetBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		local bool
		want  []string
		not   string
	}{
		{false, []string{"interrupted: job job-7 goes on", "submit events job-7", "submit cancel job-7"}, "--local"},
		{true, []string{"interrupted: job job-7 ran inside this process (--local)"}, "submit cancel"},
	} {
		err := detached(ctx, fmt.Errorf("job job-7: %w", context.Canceled), "job-7", tc.local)
		var de *detachedError
		if !errors.As(err, &de) {
			t.Fatalf("detached gave %v", err)
		}
		var out bytes.Buffer
		if code := printDetached(&out, de); code != ExitInterrupted {
			t.Errorf("exit %d, want %d", code, ExitInterrupted)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("local=%v: %q lacks %q", tc.local, out.String(), w)
			}
		}
		if strings.Contains(out.String(), tc.not) {
			t.Errorf("local=%v: %q has %q", tc.local, out.String(), tc.not)
		}
	}
	if err := detached(context.Background(), errors.New("boom"), "job-7", false); err.Error() != "boom" {
		t.Errorf("an error with ctx alive became %v", err)
	}
}

// TestProgressShowsStageDurationsAndFailingTests: each finished stage's
// line has its own duration; a stage's note (the failing tests) follows it.
func TestProgressShowsStageDurationsAndFailingTests(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	p := newProgress(IO{Stderr: &stderr})
	t0 := time.Now()
	p.event(messages.Event{Type: messages.EventStageStarted, Stage: messages.StageRunTests, Seq: 4, Iteration: 1, Time: t0})
	p.event(messages.Event{Type: messages.EventStageFinished, Stage: messages.StageRunTests, Seq: 4, Iteration: 1, Time: t0.Add(3200 * time.Millisecond),
		Outcome: "1 passed, 1 failed, 0 errors", Message: "failing: test_total"})
	got := stderr.String()
	if !strings.Contains(got, "took 3.2s") || !strings.Contains(got, "failing: test_total") {
		t.Errorf("progress:\n%s", got)
	}
}

// TestFileOutputsByNameAndSize: File and Dir outputs show as what they are,
// with how to download them, never as their 64-hex references.
func TestFileOutputsByNameAndSize(t *testing.T) {
	var b strings.Builder
	hex64 := strings.Repeat("ab", 32)
	printOutputs(&b, "job-1", map[string]any{
		"report": map[string]any{"path": "report", "size": float64(12800), "sha256": hex64, "object": "sha256:" + hex64},
		"charts": map[string]any{"path": "charts", "files": float64(3), "size": float64(40960), "object": "sha256:" + hex64},
		"total":  16.75,
	})
	out := b.String()
	for _, want := range []string{"report = file report (12.5 KiB)", "charts = directory charts/ (3 files, 40.0 KiB)", "total = 16.75",
		"download the files: submit result job-1 --out DIR"} {
		if !strings.Contains(out, want) {
			t.Errorf("outputs lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, hex64) {
		t.Errorf("outputs show a 64-hex reference:\n%s", out)
	}
}
