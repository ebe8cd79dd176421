package machine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// drive is run (machine_test.go) for any submission: it answers every
// dispatch in FIFO order until the job is done.
func drive(t *testing.T, w *world, sub Submission) (State, []Command) {
	t.Helper()
	sub.Spec.Normalize("")
	var s State
	var all []Command
	queue := []Input{{Kind: InputSubmitted, Time: t0, Submit: &sub}}
	for i := 0; len(queue) > 0; i++ {
		if i > 500 {
			t.Fatal("job did not finish in 500 steps")
		}
		ev := queue[0]
		queue = queue[1:]
		next, cmds := Step(s, ev)
		s = next
		all = append(all, cmds...)
		for _, c := range cmds {
			if c.Dispatch != nil {
				queue = append(queue, Input{Kind: InputStageResult, Time: ev.Time.Add(time.Second), Result: w.answer(c.Dispatch)})
			}
		}
	}
	if !s.Done() {
		t.Fatalf("job not done: phase %s, pending %v", s.Phase, s.Pending)
	}
	return s, all
}

func dispatched(cmds []Command, stage messages.Stage) []*messages.StageCommand {
	var out []*messages.StageCommand
	for _, c := range cmds {
		if c.Dispatch != nil && c.Dispatch.Stage == stage {
			out = append(out, c.Dispatch)
		}
	}
	return out
}

var salesRefs = []messages.SampleRef{{Name: "sales", Object: "sha256:" + strings.Repeat("a", 64) + ".csv", FileName: "sales.csv"}}

func runSubmission() Submission {
	spec := messages.JobSpec{Prompt: "sum sales", Inputs: map[string]messages.Type{"threshold": messages.TypeFloat},
		Samples: map[string]string{"sales": salesRefs[0].Object}, Outputs: map[string]messages.Type{"total": messages.TypeFloat}}
	return Submission{JobID: "run1", Spec: spec, Samples: salesRefs, Rerun: &Rerun{
		FromJob:  "job1",
		Solution: messages.Solution{Language: "python", Code: "print(1)\n", Packages: []string{"pandas"}},
		Image:    "env-7", Packages: []string{"pandas"}, SystemPackages: []string{"libgomp1"},
		Args: map[string]string{"threshold": "2.5"},
	}}
}

func TestRunDispatchesOneScriptRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.answers[messages.StageRun] = []any{messages.AcceptanceOutput{OK: true, Outputs: map[string]any{"total": 12.5}}}
	s, cmds := drive(t, w, runSubmission())
	if diff := cmp.Diff([]string{"run"}, stagesOf(cmds)); diff != "" {
		t.Fatalf("stages (-want +got):\n%s", diff)
	}
	var in messages.AcceptanceInput
	if err := json.Unmarshal(dispatched(cmds, messages.StageRun)[0].Input, &in); err != nil {
		t.Fatal(err)
	}
	want := messages.AcceptanceInput{Image: "env-7", Env: messages.BuildInput{Packages: []string{"pandas"}, SystemPackages: []string{"libgomp1"}},
		Code: "print(1)\n", Samples: salesRefs, Args: map[string]string{"threshold": "2.5"},
		Outputs: map[string]messages.Type{"total": messages.TypeFloat}, Timeout: messages.Duration(messages.DefaultTimeout),
		Resources: messages.Resources{CPU: 1, Memory: messages.DefaultMemory}}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("run input (-want +got):\n%s", diff)
	}
	r := ResultOf(s)
	if !r.Success || r.Outputs["total"] != 12.5 || r.Solution == nil || r.Solution.Code != "print(1)\n" || r.Image != "env-7" {
		t.Errorf("result %+v", r)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "run of job job1") {
		t.Errorf("notes %q do not say whose script ran", r.Notes)
	}
}

func TestRunFailures(t *testing.T) {
	t.Parallel()
	t.Run("the script fails on the new data", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.answers[messages.StageRun] = []any{messages.AcceptanceOutput{ExitCode: 1, Output: "Traceback...", Problems: []string{"solution.py exited with code 1: KeyError: 'price'"}}}
		s, _ := drive(t, w, runSubmission())
		r := ResultOf(s)
		if r.Success || r.Status != messages.StatusFailed || !strings.Contains(r.Error, "KeyError") || r.ExitCode != 1 || r.Output != "Traceback..." {
			t.Errorf("result status %s error %q exit %d output %q", r.Status, r.Error, r.ExitCode, r.Output)
		}
	})
	t.Run("the sandbox cannot run it", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.errs[messages.StageRun] = messages.ErrorInfra
		s, _ := drive(t, w, runSubmission())
		if s.Status != messages.StatusErrored {
			t.Errorf("status %s, want errored", s.Status)
		}
	})
	t.Run("no code", func(t *testing.T) {
		t.Parallel()
		sub := runSubmission()
		sub.Rerun.Solution.Code = " \n"
		s, cmds := drive(t, newWorld(t), sub)
		if len(stagesOf(cmds)) != 0 || s.Status != messages.StatusFailed || !strings.Contains(s.Error, "no script") {
			t.Errorf("stages %v status %s error %q", stagesOf(cmds), s.Status, s.Error)
		}
	})
}

func constraintWorld(t *testing.T) *world {
	w := newWorld(t)
	w.answers[messages.StageProfile] = []any{messages.ProfileOutput{DataContext: "ctx (unparsed)", GeneratedSchemas: map[string]string{"sales": "schema"},
		Unparsed: []string{"orders ship within a week"}, Columns: []messages.DataColumn{{Sample: "sales", Name: "days", Type: "int"}},
		Render: json.RawMessage(`{"samples":"ctx"}`)}}
	w.answers[messages.StageConstraint] = []any{messages.ConstraintOutput{DataContext: "ctx (with the check)", GeneratedSchemas: map[string]string{"sales": "schema with the check"},
		Checks: []messages.ConstraintCheck{{Constraint: "orders ship within a week", Check: `"days" <= 7`}}}}
	return w
}

func TestConstraintStageRunsOnceAlongsidePlanning(t *testing.T) {
	t.Parallel()
	w := constraintWorld(t)
	spec := baseSpec()
	spec.Constraints = []string{"orders ship within a week"}
	spec.Outputs = map[string]messages.Type{"row_count": messages.TypeInt}
	s, _, cmds := run(t, w, spec, salesRefs)
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", s.Status, s.Error)
	}
	if diff := cmp.Diff([]string{"profile", "constraint", "plan", "code", "tests", "build", "run_tests", "acceptance"}, stagesOf(cmds)); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	c := dispatched(cmds, messages.StageConstraint)[0]
	var in messages.ConstraintInput
	if err := json.Unmarshal(c.Input, &in); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"orders ship within a week"}, in.Constraints); diff != "" || string(in.Render) != `{"samples":"ctx"}` || len(in.Columns) != 1 {
		t.Errorf("constraint input %+v", in)
	}
	// The plan had the first data context; code and tests the one with the check.
	var plan messages.PlanInput
	json.Unmarshal(dispatched(cmds, messages.StagePlan)[0].Input, &plan)
	var code messages.CodeInput
	json.Unmarshal(dispatched(cmds, messages.StageCode)[0].Input, &code)
	var tests messages.TestsInput
	json.Unmarshal(dispatched(cmds, messages.StageTests)[0].Input, &tests)
	if plan.DataContext != "ctx (unparsed)" || code.DataContext != "ctx (with the check)" || tests.DataContext != "ctx (with the check)" {
		t.Errorf("data contexts: plan %q code %q tests %q", plan.DataContext, code.DataContext, tests.DataContext)
	}
	r := ResultOf(s)
	if r.GeneratedSchemas["sales"] != "schema with the check" || r.DataContext != "ctx (with the check)" {
		t.Errorf("result schemas %v, data context %q", r.GeneratedSchemas, r.DataContext)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), `read by the model as the check "days" <= 7`) {
		t.Errorf("notes %q", r.Notes)
	}
}

// TestGenerationWaitsForTheChecks: whichever of plan and constraint comes
// back first, code and tests start once both are in, exactly once.
func TestGenerationWaitsForTheChecks(t *testing.T) {
	t.Parallel()
	for _, planFirst := range []bool{true, false} {
		w := constraintWorld(t)
		spec := baseSpec()
		spec.Constraints = []string{"orders ship within a week"}
		spec.Normalize("")
		s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec, Samples: salesRefs}})
		s, cmds = Step(s, Input{Kind: InputStageResult, Time: t0, Result: w.answer(dispatched(cmds, messages.StageProfile)[0])})
		plan, cons := w.answer(dispatched(cmds, messages.StagePlan)[0]), w.answer(dispatched(cmds, messages.StageConstraint)[0])
		first, second := plan, cons
		if !planFirst {
			first, second = cons, plan
		}
		s, cmds = Step(s, Input{Kind: InputStageResult, Time: t0, Result: first})
		if n := len(dispatched(cmds, messages.StageCode)); n != 0 {
			t.Errorf("planFirst=%v: code dispatched before both plan and checks were in", planFirst)
		}
		_, cmds = Step(s, Input{Kind: InputStageResult, Time: t0, Result: second})
		if len(dispatched(cmds, messages.StageCode)) != 1 || len(dispatched(cmds, messages.StageTests)) != 1 {
			t.Errorf("planFirst=%v: stages after both %v, want code and tests once", planFirst, stagesOf(cmds))
		}
	}
}

func TestNoConstraintStageWhenEverythingParsed(t *testing.T) {
	t.Parallel()
	spec := baseSpec()
	spec.Constraints = []string{"quantity must be positive"}
	_, _, cmds := run(t, newWorld(t), spec, salesRefs)
	if n := len(dispatched(cmds, messages.StageConstraint)); n != 0 {
		t.Errorf("%d constraint stages, want none", n)
	}
}

func TestConstraintStageFailureIsAdvisory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.answers[messages.StageProfile] = []any{messages.ProfileOutput{DataContext: "ctx", Unparsed: []string{"odd rule"}, Render: []byte(`{}`)}}
	w.errs[messages.StageConstraint] = messages.ErrorInfra
	spec := baseSpec()
	spec.Outputs = map[string]messages.Type{"n": messages.TypeInt}
	s, _, cmds := run(t, w, spec, []messages.SampleRef{{Name: "s", Object: "sha256:" + strings.Repeat("c", 64) + ".csv", FileName: "s.csv"}})
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s (stages %v)", s.Status, s.Error, stagesOf(cmds))
	}
}

// The acceptance run names every sample by its option, so a script whose
// sample options are required runs; a failed acceptance says so in its
// stage record and progress event, not "ok".
func TestAcceptancePassesSamplesAndSaysHowItWent(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.answers[messages.StageAcceptance] = []any{
		messages.AcceptanceOutput{ExitCode: 2, Problems: []string{"solution.py exited with code 2: the following arguments are required: --sales"}},
		messages.AcceptanceOutput{OK: true, Outputs: map[string]any{"total": 12.5}},
	}
	w.answers[messages.StageFix] = []any{messages.Solution{Language: "python", Code: "def f():\n    return 2\n"}}
	spec := messages.JobSpec{Prompt: "sum sales", Samples: map[string]string{"sales": salesRefs[0].Object},
		Outputs: map[string]messages.Type{"total": messages.TypeFloat}}
	s, _, cmds := run(t, w, spec, salesRefs)
	if s.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", s.Status, s.Error)
	}
	acc := dispatched(cmds, messages.StageAcceptance)
	if len(acc) != 2 {
		t.Fatalf("%d acceptance runs, want 2", len(acc))
	}
	var in messages.AcceptanceInput
	if err := json.Unmarshal(acc[0].Input, &in); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"sales": "/var/inputs/sales.csv"}, in.Args); diff != "" {
		t.Errorf("acceptance args (-want +got):\n%s", diff)
	}
	var outcomes []string
	for _, c := range cmds {
		if e := c.Emit; e != nil && e.Type == messages.EventStageFinished && e.Stage == messages.StageAcceptance {
			outcomes = append(outcomes, e.Outcome)
		}
	}
	want := []string{"failed: solution.py exited with code 2: the following arguments are required: --sales", "ok"}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("acceptance outcomes (-want +got):\n%s", diff)
	}
}
