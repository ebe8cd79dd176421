package machine

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// oneRoundWorld answers the one-round code call with a plan in its reply.
func oneRoundWorld(t *testing.T) *world {
	w := newWorld(t)
	w.answers[messages.StageCode] = []any{messages.CodeOutput{
		Solution: messages.Solution{Language: "python", Code: "def f():\n    return 1\n"},
		Plan:     &messages.Plan{Description: "return one", Approach: "1. f() -> int"},
	}}
	return w
}

// TestOneRoundIsTheDefault: a job that names no first_pass writes its code
// (asking for the plan in the reply) and its tests (from the task alone)
// in the first step, and keeps the plan the code reply wrote.
func TestOneRoundIsTheDefault(t *testing.T) {
	t.Parallel()
	spec := messages.JobSpec{Prompt: "return one", Outputs: map[string]messages.Type{"n": messages.TypeInt}}
	spec.Normalize("")
	if spec.Options.FirstPass != messages.FirstPassOneRound {
		t.Fatalf("normalised first_pass %q, want one_round", spec.Options.FirstPass)
	}
	s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
	if diff := cmp.Diff([]string{"code", "tests"}, stagesOf(cmds)); diff != "" {
		t.Fatalf("first step (-want +got):\n%s", diff)
	}
	if s.Phase != PhaseGenerating {
		t.Errorf("phase %q, want generating", s.Phase)
	}
	var code messages.CodeInput
	var tests messages.TestsInput
	if err := json.Unmarshal(dispatched(cmds, messages.StageCode)[0].Input, &code); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(dispatched(cmds, messages.StageTests)[0].Input, &tests); err != nil {
		t.Fatal(err)
	}
	if !code.PlanInline || code.Plan != (messages.Plan{}) || tests.Plan != (messages.Plan{}) {
		t.Errorf("code input plan_inline %v plan %+v, tests plan %+v: want the plan asked of the code call and none given", code.PlanInline, code.Plan, tests.Plan)
	}

	w := oneRoundWorld(t)
	// Mutation off: the stages of the first pass are what is looked at.
	final, _, all := run(t, w, messages.JobSpec{Prompt: "return one", Outputs: map[string]messages.Type{"n": messages.TypeInt},
		Options: messages.Options{Mutation: messages.MutationOff}}, nil)
	if final.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", final.Status, final.Error)
	}
	if diff := cmp.Diff([]string{"code", "tests", "build", "run_tests", "acceptance"}, stagesOf(all)); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
	if r := ResultOf(final); r.Plan == nil || r.Plan.Approach != "1. f() -> int" {
		t.Errorf("result plan %+v, want the code reply's", r.Plan)
	}
}

// TestOneRoundWithoutAPlan: a model that leaves the plan out of its code
// reply (as real ones do) does not stop the job; the job says so.
func TestOneRoundWithoutAPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t) // its code answer is a bare solution
	final, _, _ := run(t, w, messages.JobSpec{Prompt: "return one"}, nil)
	if final.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: %s", final.Status, final.Error)
	}
	r := ResultOf(final)
	if r.Plan != nil {
		t.Errorf("plan %+v, want none", r.Plan)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "wrote no plan") {
		t.Errorf("notes %q: want one saying the reply had no plan", r.Notes)
	}
}

// TestOneRoundWaitsForTheChecks: with samples whose constraints the model
// reads, code and tests start once the checks are in (their data context
// has them), and never plan.
func TestOneRoundWaitsForTheChecks(t *testing.T) {
	t.Parallel()
	w := constraintWorld(t)
	spec := messages.JobSpec{Prompt: "sum sales", Constraints: []string{"orders ship within a week"}}
	spec.Normalize("")
	s, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec, Samples: salesRefs}})
	s, cmds = Step(s, Input{Kind: InputStageResult, Time: t0, Result: w.answer(dispatched(cmds, messages.StageProfile)[0])})
	if diff := cmp.Diff([]string{"constraint"}, stagesOf(cmds)); diff != "" {
		t.Fatalf("after the profile (-want +got):\n%s", diff)
	}
	_, cmds = Step(s, Input{Kind: InputStageResult, Time: t0, Result: w.answer(dispatched(cmds, messages.StageConstraint)[0])})
	if diff := cmp.Diff([]string{"code", "tests"}, stagesOf(cmds)); diff != "" {
		t.Fatalf("after the checks (-want +got):\n%s", diff)
	}
	var code messages.CodeInput
	if err := json.Unmarshal(dispatched(cmds, messages.StageCode)[0].Input, &code); err != nil {
		t.Fatal(err)
	}
	if code.DataContext != "ctx (with the check)" || !code.PlanInline {
		t.Errorf("code input: data context %q, plan_inline %v", code.DataContext, code.PlanInline)
	}
}

// TestFirstPassOptions: plan_first keeps the plan call; an empty value
// (a spec normalised before the option existed: a stored state, a
// recorded log) plans first too; candidates share one plan.
func TestFirstPassOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts messages.Options
		want []string
	}{
		{"plan_first", messages.Options{FirstPass: messages.FirstPassPlanFirst}, []string{"plan"}},
		{"one_round", messages.Options{FirstPass: messages.FirstPassOneRound}, []string{"code", "tests"}},
		{"candidates", messages.Options{Candidates: 3}, []string{"plan"}},
	} {
		spec := messages.JobSpec{Prompt: "p", Options: tc.opts}
		if err := spec.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		spec.Normalize("")
		_, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: spec}})
		if diff := cmp.Diff(tc.want, stagesOf(cmds)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	// Unnormalised (as recorded before the option): plan first.
	_, cmds := Step(State{}, Input{Kind: InputSubmitted, Time: t0, Submit: &Submission{JobID: "j", Spec: messages.JobSpec{Prompt: "p"}}})
	if diff := cmp.Diff([]string{"plan"}, stagesOf(cmds)); diff != "" {
		t.Errorf("an empty first_pass (-want +got):\n%s", diff)
	}
}

// TestPlanFirstLogsReplayUnderTheOption: the logs recorded before the
// one-round first pass (their specs name no first_pass) replay to the same
// final states when their submissions ask for plan_first explicitly.
func TestPlanFirstLogsReplayUnderTheOption(t *testing.T) {
	t.Parallel()
	n := 0
	for name := range replayScenarios {
		path := "testdata/" + name + ".events.jsonl"
		log := readLog(t, path)
		if log[0].Submit.Spec.Options.FirstPass != "" {
			continue // recorded with the option
		}
		n++
		log[0].Submit.Spec.Options.FirstPass = messages.FirstPassPlanFirst
		var s State
		for _, ev := range log {
			s, _ = Step(s, ev)
		}
		s.Spec.Options.FirstPass = ""
		want, err := os.ReadFile("testdata/" + name + ".final.json")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.MarshalIndent(s, "", "  ")
		if diff := cmp.Diff(strings.TrimSpace(string(want)), strings.TrimSpace(string(got))); diff != "" {
			t.Errorf("%s under plan_first (-recorded +replayed):\n%s", path, diff)
		}
	}
	if n < 4 {
		t.Errorf("%d plan-first logs replayed, want the 4 recorded before the option", n)
	}
}
