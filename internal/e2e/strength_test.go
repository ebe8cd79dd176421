package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/pkg/messages"
)

// End-to-end tests of test strength (issue 23): the real stack, the
// process sandbox running mutate.py, and the fake model answering a
// HumanEval problem over HTTP.

// humanEvalProblem loads one problem of HumanEval; outside CI a missing
// dataset is a skip.
func humanEvalProblem(t *testing.T, taskID string) ([]problemset.Problem, problemset.Problem) {
	t.Helper()
	path := problemset.DefaultPath(repoRoot(t))
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("HumanEval dataset missing (%v): set AUTOCODER_DATASETS to its directory", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ps, err := problemset.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.TaskID == taskID {
			return ps, p
		}
	}
	t.Fatalf("%s is not in %s", taskID, path)
	return nil, problemset.Problem{}
}

func humanEvalModel(t *testing.T, ps []problemset.Problem, mode fakellm.HumanEvalMode) *fakellm.Server {
	t.Helper()
	h, err := fakellm.NewHumanEval(ps, mode)
	if err != nil {
		t.Fatal(err)
	}
	fake := fakellm.New()
	t.Cleanup(fake.Close)
	fake.Handle(h.Reply)
	return fake
}

func problemSpec(p problemset.Problem, edit func(*messages.Options)) messages.JobSpec {
	spec := messages.JobSpec{Name: "strength", Prompt: p.TaskPrompt(), Options: messages.Options{MaxIterations: 5}}
	if edit != nil {
		edit(&spec.Options)
	}
	return spec
}

// The model's first answer has an off-by-one its weak tests do not reach:
// the tests pass, the mutants show they are weak, the model is shown the
// survivors and writes stronger tests, a stronger test fails on the
// solution, the diagnosis calls it a logic error, and the code is fixed.
func TestStrengthCatchesAnOffByOne(t *testing.T) {
	t.Parallel()
	ps, p := humanEvalProblem(t, "HumanEval/100")
	fake := humanEvalModel(t, ps, fakellm.HumanEvalPlausibleWrong)
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, problemSpec(p, nil))
	requireSuccess(t, res)
	if strings.TrimSpace(res.Solution.Code) != strings.TrimSpace(p.Canonical()) {
		t.Errorf("the off-by-one was not repaired:\n%s", res.Solution.Code)
	}
	for stage, want := range map[messages.Stage]int{messages.StageStrengthenTests: 1, messages.StageDiagnose: 1, messages.StageFix: 1} {
		if got := countStage(res, stage); got != want {
			t.Errorf("%d %s stages, want %d (stages %v)", got, stage, want, stageNames(res))
		}
	}
	ts := res.TestStrength
	if ts == nil || ts.Rounds != 1 || len(ts.Scores) < 2 || ts.InitialScore() >= ts.MinTestStrength || ts.Score < ts.MinTestStrength {
		t.Fatalf("test_strength %+v", ts)
	}
	if ts.Usage.Calls != 1 || ts.Usage.InputTokens == 0 {
		t.Errorf("strengthening usage %+v", ts.Usage)
	}
	if !strings.Contains(res.Tests, "def test_check():") || !strings.Contains(res.Tests, "def test_example_") {
		t.Errorf("the final tests are not the stronger ones:\n%s", res.Tests)
	}
	// The strengthening call showed the model the survivors.
	var shown bool
	for _, r := range fake.Requests() {
		for _, m := range r.Messages {
			shown = shown || (r.SchemaName == "tests" && strings.Contains(m.Content, "## Surviving mutants") && strings.Contains(m.Content, "+++ b/solution.py"))
		}
	}
	if !shown {
		t.Error("no tests call showed the surviving mutants")
	}
}

// Tests that are already strong are measured and cost no model call; with
// mutation off they are not measured at all.
func TestStrongTestsCostNoModelCall(t *testing.T) {
	t.Parallel()
	ps, p := humanEvalProblem(t, "HumanEval/60")
	fake := humanEvalModel(t, ps, fakellm.HumanEvalCanonical)
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, problemSpec(p, nil))
	requireSuccess(t, res)
	if countStage(res, messages.StageMutate) != 1 || countStage(res, messages.StageStrengthenTests) != 0 || res.LLMCalls != 2 {
		t.Errorf("stages %v, %d model calls: want one measurement and code (with its plan) and tests only", stageNames(res), res.LLMCalls)
	}
	if ts := res.TestStrength; ts == nil || ts.Score < ts.MinTestStrength || ts.Rounds != 0 || ts.Mutants == 0 || ts.Usage.Calls != 0 {
		t.Errorf("test_strength %+v", ts)
	}
	off := runJob(t, st, problemSpec(p, func(o *messages.Options) { o.Mutation = messages.MutationOff; o.MaxIterations = 4 }))
	requireSuccess(t, off)
	if countStage(off, messages.StageMutate) != 0 || off.TestStrength != nil {
		t.Errorf("mutation off: stages %v, test_strength %+v", stageNames(off), off.TestStrength)
	}
}
