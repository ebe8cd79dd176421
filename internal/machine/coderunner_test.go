package machine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// runSpec is a code-runner job: checked by running, with one declared output.
func runSpec(maxIter int) messages.JobSpec {
	return messages.JobSpec{Prompt: "count the frames", Outputs: map[string]messages.Type{"frames": messages.TypeInt},
		Options: messages.Options{Validate: messages.ValidateRun, MaxIterations: maxIter}}
}

var (
	crashed = messages.AcceptanceOutput{ExitCode: 1, Output: "Traceback (most recent call last):\n  File \"solution.py\", line 3\nKeyError: 'magic'\n",
		Problems: []string{"solution.py exited with code 1: KeyError: 'magic'"}}
	timedOut = messages.AcceptanceOutput{ExitCode: -1, TimedOut: true, Problems: []string{"solution.py timed out after 1s and was killed"}}
	noOutput = messages.AcceptanceOutput{ExitCode: 0, Output: "done\n", Problems: []string{"output frames (/var/outputs/frames) was not written"}}
	ranOK    = messages.AcceptanceOutput{OK: true, Outputs: map[string]any{"frames": 3}}
	// missingModule is the import check's answer: no run happened.
	missingModule = messages.AcceptanceOutput{ExitCode: 1, MissingModules: []messages.MissingModule{{Module: "zrl", Package: "zrl-tools"}},
		Problems: []string{"environment: solution.py imports modules its sandbox does not have: zrl (package zrl-tools); the script did not run"}}
)

// fixesInTurn makes every fix return new code, so no fix is "not applied".
func fixesInTurn(w *world) {
	w.fn[messages.StageFix] = func(_ *messages.StageCommand, n int) any {
		return messages.Solution{Language: "python", Code: "def f():\n    return " + strings.Repeat("1", n+2) + "\n"}
	}
}

func TestValidateRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		runs    []any
		maxIter int
		status  messages.JobStatus
		stages  []string
		errHas  string
		fixHas  []string // in the reflection turn's failure
	}{
		{name: "passes at once", runs: []any{ranOK}, maxIter: 3, status: messages.StatusSucceeded,
			stages: []string{"plan", "code", "build", "acceptance"}},
		{name: "a crash is reflected on and fixed", runs: []any{crashed, ranOK}, maxIter: 3, status: messages.StatusSucceeded,
			stages: []string{"plan", "code", "build", "acceptance", "fix", "acceptance"},
			fixHas: []string{"exit code 1", "KeyError: 'magic'", "frames (int)"}},
		{name: "a timeout is reflected on", runs: []any{timedOut, ranOK}, maxIter: 3, status: messages.StatusSucceeded,
			stages: []string{"plan", "code", "build", "acceptance", "fix", "acceptance"},
			fixHas: []string{"timed out"}},
		{name: "a missing output is reflected on", runs: []any{noOutput, ranOK}, maxIter: 3, status: messages.StatusSucceeded,
			stages: []string{"plan", "code", "build", "acceptance", "fix", "acceptance"},
			fixHas: []string{"frames (/var/outputs/frames) was not written", "exit code 0"}},
		{name: "a missing module takes the package path", runs: []any{missingModule, ranOK}, maxIter: 3, status: messages.StatusSucceeded,
			stages: []string{"plan", "code", "build", "acceptance", "build", "acceptance"}},
		{name: "a module still missing goes to the model", runs: []any{missingModule, missingModule, ranOK}, maxIter: 3, status: messages.StatusSucceeded,
			stages: []string{"plan", "code", "build", "acceptance", "build", "acceptance", "fix", "acceptance"},
			fixHas: []string{"imports modules its sandbox does not have: zrl (package zrl-tools)"}},
		{name: "max_iterations runs", runs: []any{crashed, timedOut, noOutput}, maxIter: 3, status: messages.StatusFailed,
			stages: []string{"plan", "code", "build", "acceptance", "fix", "acceptance", "fix", "acceptance"},
			errHas: "the script still fails when run after 3 runs (max_iterations): output frames (/var/outputs/frames) was not written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.answers[messages.StageAcceptance] = tc.runs
			fixesInTurn(w)
			s, _, cmds := run(t, w, runSpec(tc.maxIter), nil)
			if s.Status != tc.status || !strings.Contains(s.Error, tc.errHas) {
				t.Fatalf("status %s (%s), want %s with %q", s.Status, s.Error, tc.status, tc.errHas)
			}
			if diff := cmp.Diff(tc.stages, stagesOf(cmds)); diff != "" {
				t.Errorf("stages (-want +got):\n%s", diff)
			}
			if len(dispatches(cmds, messages.StageTests)) > 0 || len(dispatches(cmds, messages.StageRunTests)) > 0 {
				t.Error("validate: run generated or ran tests")
			}
			if s.Iteration != len(dispatches(cmds, messages.StageAcceptance)) {
				t.Errorf("iteration %d, want one per run (%d)", s.Iteration, len(dispatches(cmds, messages.StageAcceptance)))
			}
			fixes := dispatches(cmds, messages.StageFix)
			if len(tc.fixHas) == 0 {
				return
			}
			in := inputOf[messages.FixInput](t, fixes[0])
			if !in.Reflect || in.Tests != "" || len(in.Failures) != 1 {
				t.Fatalf("reflection input has tests %q and %d failures, want none and one", in.Tests, len(in.Failures))
			}
			f, _ := json.Marshal(in.Failures[0])
			for _, want := range tc.fixHas {
				if !strings.Contains(string(f), want) {
					t.Errorf("reflection failure %s does not say %q", f, want)
				}
			}
			res := ResultOf(s)
			if s.Status == messages.StatusSucceeded && fmt.Sprint(res.Outputs["frames"]) != "3" {
				t.Errorf("result outputs = %v, want frames 3", res.Outputs)
			}
		})
	}
}

// TestValidateRunSameFailureTwiceStops: a fix that does not change what the
// run reports is the same code and failure; the loop regenerates, then stops.
func TestValidateRunSameFailureTwiceStops(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.answers[messages.StageAcceptance] = []any{crashed}
	w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 1\n"}}
	s, _, _ := run(t, w, runSpec(20), nil)
	if s.Status != messages.StatusFailed || !strings.Contains(s.Error, "stuck") {
		t.Fatalf("status %s (%s), want failed: stuck", s.Status, s.Error)
	}
}

// TestContextUsedIsRecorded: the chunks a model stage reports beside its
// output are on the result, per stage, with the stage's seq and iteration.
func TestContextUsedIsRecorded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.answers[messages.StageAcceptance] = []any{ranOK}
	used := &messages.StageContext{Retrieved: true, Chunks: []messages.ContextChunk{{File: "docs/frames.md", Index: 2, Heading: "Checksums", Score: 3.5}}}
	w.fn[messages.StageCode] = func(*messages.StageCommand, int) any {
		return struct {
			messages.Solution
			messages.ContextUse
		}{messages.Solution{Language: "python", Code: "def f():\n    return 1\n"}, messages.ContextUse{Context: used}}
	}
	spec := runSpec(3)
	spec.Context = []string{"sha256:" + strings.Repeat("c", 64) + ".json"}
	s, _, cmds := run(t, w, spec, nil)
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", s.Status, s.Error)
	}
	code := dispatches(cmds, messages.StageCode)[0]
	want := []messages.StageContext{{Stage: messages.StageCode, Seq: code.Seq, Iteration: 0, Retrieved: true, Chunks: used.Chunks}}
	if diff := cmp.Diff(want, ResultOf(s).ContextUsed); diff != "" {
		t.Errorf("context_used (-want +got):\n%s", diff)
	}
	if in := inputOf[messages.CodeInput](t, code); !cmp.Equal(in.Task.Context, spec.Context) {
		t.Errorf("code input's task context = %v, want %v", in.Task.Context, spec.Context)
	}
}

// TestContextRecordStaysBounded: however many chunks a stage reports, and
// however long their names, the stored record is bounded.
func TestContextRecordStaysBounded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.answers[messages.StageAcceptance] = []any{ranOK}
	var many []messages.ContextChunk
	for i := range 500 {
		many = append(many, messages.ContextChunk{File: strings.Repeat("f", 5000), Index: i, Heading: strings.Repeat("h", 5000)})
	}
	w.fn[messages.StagePlan] = func(*messages.StageCommand, int) any {
		return struct {
			messages.Plan
			messages.ContextUse
		}{messages.Plan{Description: "d", Approach: "a"}, messages.ContextUse{Context: &messages.StageContext{Retrieved: true, Chunks: many}}}
	}
	spec := runSpec(3)
	spec.Context = []string{"sha256:" + strings.Repeat("c", 64) + ".json"}
	s, _, _ := run(t, w, spec, nil)
	got := ResultOf(s).ContextUsed
	if len(got) != 1 || len(got[0].Chunks) != maxContextChunks || got[0].Chunks[0].Index != 0 {
		t.Fatalf("context_used has %d records, the first with %d chunks; want 1 with the best %d", len(got), len(got[0].Chunks), maxContextChunks)
	}
	if b, _ := json.Marshal(got); len(b) > maxContextChunks*(2*contextNameBudget+200) {
		t.Errorf("context record is %d bytes", len(b))
	}
}

// TestValidateRunChecksImportsAndKeepsOutput: the code runner's runs ask
// for the import check; a missing module's package is added to the build;
// a successful run's output is on the result.
func TestValidateRunChecksImportsAndKeepsOutput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	printed := ranOK
	printed.Output = "counted 3 frames\n"
	w.answers[messages.StageAcceptance] = []any{missingModule, printed}
	s, _, cmds := run(t, w, runSpec(3), nil)
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", s.Status, s.Error)
	}
	runs := dispatches(cmds, messages.StageAcceptance)
	for _, c := range runs {
		var in messages.AcceptanceInput
		if err := json.Unmarshal(c.Input, &in); err != nil || !in.CheckImports {
			t.Fatalf("an acceptance run without the import check: %s", c.Input)
		}
	}
	var second messages.AcceptanceInput
	if err := json.Unmarshal(runs[1].Input, &second); err != nil || !strings.Contains(strings.Join(second.Env.Packages, ","), "zrl-tools") {
		t.Fatalf("the second run's environment %+v lacks zrl-tools", second.Env)
	}
	if r := ResultOf(s); r.Output != "counted 3 frames\n" {
		t.Fatalf("result output %q, want the run's", r.Output)
	}
}
