package e2e

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// End-to-end tests of the repair loop (issue 5): the real stack, the
// process sandbox and the fake model, one test per path.

func diagnosis(needs []string, fs ...messages.Failure) fakellm.Reply {
	if needs == nil {
		needs = []string{}
	}
	return fakellm.JSON(messages.Diagnosis{Failures: fs, NeedsPackages: needs, NeedsSystemPackages: []string{}})
}

func failure(test string, typ messages.ErrorType, msg, fix string) messages.Failure {
	return messages.Failure{TestName: test, ErrorMessage: msg, RootCause: "see the error", SuggestedFix: fix, ErrorType: typ}
}

func hasNote(r *messages.Result, sub string) bool {
	for _, n := range r.Notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// solutionRequests returns the user messages of the model calls that asked
// for a solution (code and fix), in order.
func solutionRequests(fake *fakellm.Server) []string {
	var out []string
	for _, r := range fake.Requests() {
		if r.SchemaName != "solution" {
			continue
		}
		for _, m := range r.Messages {
			if m.Role == "user" {
				out = append(out, m.Content)
			}
		}
	}
	return out
}

func requireSuccess(t *testing.T, res *messages.Result) {
	t.Helper()
	if !res.Success {
		t.Fatalf("job failed: %s\nstages %v\nnotes %q\n%s", res.Error, stageNames(res), res.Notes, res.Output)
	}
}

// A logic bug, a wrong test and a missing package, diagnosed together, are
// repaired in one round: a code fix, a patch of just the wrong test and a
// rebuild with the package, then one test run.
func TestRepairMixedFailures(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	buildWheel(t, wheels, "autocoder_probe", "autocoder_probe", "VALUE = 42\n")
	tests := answerTests + `

def test_wrong():
    assert answer() == 41


def test_probe():
    import importlib
    # Built at run time, so the static scan cannot see it.
    assert importlib.import_module("autocoder_" + "probe").VALUE == answer()
`
	fake := fakellm.New()
	defer fake.Close()
	scriptWithTests(fake, tests, sol(code("6 * 6")), sol(code("6 * 7")))
	fake.On("diagnosis", diagnosis([]string{"autocoder-probe"},
		failure("test_answer", messages.ErrorLogic, "assert 36 == 42", "return 6 * 7"),
		failure("test_wrong", messages.ErrorTestError, "assert 36 == 41", "expect 42, as the task says"),
		failure("test_probe", messages.ErrorEnvironment, "ModuleNotFoundError: No module named 'autocoder_probe'", "install autocoder-probe"),
	))
	fake.On("test_patches", fakellm.JSON(messages.TestPatches{Patches: []messages.TestPatch{{
		TestName: "test_wrong", FixedCode: "def test_wrong():\n    assert answer() == 42\n"}}}))
	cfg := testConfig(t, fake)
	cfg.PipFindLinks = wheels
	st := startLocal(t, cfg)
	res := runJob(t, st, answerSpec())
	requireSuccess(t, res)
	if res.Attempts != 2 || countStage(res, messages.StageDiagnose) != 1 {
		t.Errorf("attempts %d, stages %v: want one round of repairs", res.Attempts, stageNames(res))
	}
	for stage, want := range map[messages.Stage]int{messages.StageFix: 1, messages.StagePatchTests: 1, messages.StageBuild: 2, messages.StageVerify: 0} {
		if got := countStage(res, stage); got != want {
			t.Errorf("%d %s stages, want %d (stages %v)", got, stage, want, stageNames(res))
		}
	}
	if !strings.Contains(res.Solution.Code, "6 * 7") || !strings.Contains(res.Tests, "assert answer() == 42\n\n\ndef test_probe") {
		t.Errorf("code or tests not repaired:\n%s", res.Tests)
	}
	if !strings.Contains(res.Tests, `importlib.import_module("autocoder_" + "probe")`) || !strings.Contains(res.Tests, "def test_type():") {
		t.Error("the patch touched tests it was not given")
	}
	found := false
	for _, p := range res.DetectedPackages {
		found = found || p == "autocoder-probe"
	}
	if !found || res.Outputs["answer"] != float64(42) {
		t.Errorf("packages %v, outputs %v", res.DetectedPackages, res.Outputs)
	}
}

// A failure diagnosed as a wrong test that fails the same way after its
// patch is moved to logic, and the code is fixed.
func TestRepairFlipTestErrorToLogic(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 6")), sol(code("6 * 7")))
	// The model keeps blaming the test.
	fake.On("diagnosis", diagnosis(nil, failure("test_answer", messages.ErrorTestError, "assert 36 == 42", "expect 36")))
	fake.On("test_patches", fakellm.JSON(messages.TestPatches{Patches: []messages.TestPatch{{
		TestName: "test_answer", FixedCode: "def test_answer():\n    # the task says 42\n    assert answer() == 42\n"}}}))
	fake.On("fix_verification", fakellm.JSON(messages.FixVerification{AllFixesApplied: true, MissingFixes: []string{}, Explanation: "ok"}))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	requireSuccess(t, res)
	if res.Attempts != 3 || countStage(res, messages.StagePatchTests) != 1 || countStage(res, messages.StageFix) != 1 {
		t.Errorf("attempts %d, stages %v: want a patch, then a fix", res.Attempts, stageNames(res))
	}
	if !hasNote(res, "reclassified test_answer: test_error -> logic") {
		t.Errorf("notes %q lack the flip", res.Notes)
	}
	if !strings.Contains(res.Solution.Code, "6 * 7") {
		t.Error("the code was not fixed")
	}
}

// A failure diagnosed as logic that fails the same way after a fix that was
// verified as applied is moved to test_error, and the test is patched.
func TestRepairFlipLogicToTestError(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	wrong := answerTests + "\n\ndef test_wrong():\n    assert answer() == 41\n"
	scriptWithTests(fake, wrong, sol(code("6 * 7")), sol(code("int(6 * 7)")))
	// The model keeps blaming the code.
	fake.On("diagnosis", diagnosis(nil, failure("test_wrong", messages.ErrorLogic, "assert 42 == 41", "replace `6 * 7` with `int(6 * 7)`")))
	fake.On("test_patches", fakellm.JSON(messages.TestPatches{Patches: []messages.TestPatch{{
		TestName: "test_wrong", FixedCode: "def test_wrong():\n    assert answer() == 42\n"}}}))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	requireSuccess(t, res)
	if res.Attempts != 3 || countStage(res, messages.StageFix) != 1 || countStage(res, messages.StagePatchTests) != 1 || countStage(res, messages.StageVerify) != 0 {
		t.Errorf("attempts %d, stages %v: want a fix (verified mechanically), then a patch", res.Attempts, stageNames(res))
	}
	if !hasNote(res, "reclassified test_wrong: logic -> test_error") {
		t.Errorf("notes %q lack the flip", res.Notes)
	}
}

// A fix that does not apply what the diagnosis asked is caught (first by
// the mechanical check, then by the verify stage) and asked again with
// escalating instructions that name what is missing.
func TestRepairFailedVerificationEscalates(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake,
		sol(code("6 * 6")),               // code
		sol(code("6 * 6")),               // fix 1: unchanged
		sol(code("6 * 6  # multiplied")), // fix 2: changed, but not fixed
		sol(code("6 * 7")),               // fix 3
	)
	fake.On("diagnosis", diagnosis(nil, failure("test_answer", messages.ErrorLogic, "assert 36 == 42", "multiply six by seven")))
	fake.On("fix_verification",
		fakellm.JSON(messages.FixVerification{AllFixesApplied: false, MissingFixes: []string{"test_answer: still multiplies six by six"}, Explanation: "only a comment was added"}),
		fakellm.JSON(messages.FixVerification{AllFixesApplied: true, MissingFixes: []string{}, Explanation: "now six times seven"}))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	requireSuccess(t, res)
	if res.Attempts != 2 || countStage(res, messages.StageFix) != 3 || countStage(res, messages.StageVerify) != 2 {
		t.Errorf("attempts %d, stages %v: want three fixes, two verifications, one rerun", res.Attempts, stageNames(res))
	}
	reqs := solutionRequests(fake)
	if len(reqs) != 4 {
		t.Fatalf("%d solution requests, want 4", len(reqs))
	}
	if strings.Contains(reqs[1], "previous fix") {
		t.Error("the first fix was sent with escalation")
	}
	if !strings.Contains(reqs[2], "The previous fix was incomplete") || !strings.Contains(reqs[2], "test_answer: multiply six by seven") {
		t.Errorf("second fix lacks escalation 1 with the missing fix:\n%s", reqs[2])
	}
	if !strings.Contains(reqs[3], "Earlier fixes did not work") || !strings.Contains(reqs[3], "still multiplies six by six") {
		t.Errorf("third fix lacks escalation 2 with the verifier's missing fix:\n%s", reqs[3])
	}
	if !hasNote(res, "asking again with escalation 2") {
		t.Errorf("notes %q", res.Notes)
	}
}

// A model that never changes the code does not loop: after the escalations
// the repeat is detected, the code is regenerated from the plan twice (with
// the failure history), and then the job stops with the reason.
func TestRepairStuckLoopStops(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 6")))
	fake.On("diagnosis", diagnosis(nil, failure("test_answer", messages.ErrorLogic, "assert 36 == 42", "return 6 * 7")))
	spec := answerSpec()
	spec.Options.MaxIterations = 10
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, spec)
	if res.Success || res.Status != messages.StatusFailed {
		t.Fatalf("status %s: a job that never changes must fail", res.Status)
	}
	if !strings.Contains(res.Error, "stuck:") || !strings.Contains(res.Error, "after 2 regenerations") || !strings.Contains(res.Error, "test_answer") {
		t.Errorf("error %q does not say why it stopped", res.Error)
	}
	if res.Attempts != 4 || countStage(res, messages.StageDiagnose) != 1 {
		t.Errorf("attempts %d (max 10), stages %v: want a stop at the first repeats, one diagnosis", res.Attempts, stageNames(res))
	}
	reqs := solutionRequests(fake)
	regens := 0
	for _, r := range reqs {
		if strings.Contains(r, "Earlier attempts failed") && strings.Contains(r, "test_answer fails with") {
			regens++
		}
	}
	if regens != 2 {
		t.Errorf("%d regenerations with the failure history, want 2", regens)
	}
}

// Three candidates race; only the second passes, and it wins.
func TestRepairCandidatesFirstPassWins(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "return 42", Approach: "a function and a main block"}))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: answerTests}))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}))
	exprs := map[string]string{"Candidate 1 of 3": "6 * 5", "Candidate 2 of 3": "6 * 7", "Candidate 3 of 3": "6 * 6"}
	fake.Handle(func(r fakellm.Request) fakellm.Reply {
		if r.SchemaName != "solution" {
			return fakellm.Status(400, "")
		}
		for _, m := range r.Messages {
			for marker, expr := range exprs {
				if strings.Contains(m.Content, marker) {
					return fakellm.JSON(sol(code(expr)))
				}
			}
		}
		return fakellm.Status(400, "")
	})
	spec := answerSpec()
	spec.Options.Candidates = 3
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, spec)
	requireSuccess(t, res)
	if res.Attempts != 1 || countStage(res, messages.StageCode) != 3 || countStage(res, messages.StageTests) != 1 || countStage(res, messages.StageDiagnose) != 0 {
		t.Errorf("attempts %d, stages %v: want three candidates, one test file, no repair", res.Attempts, stageNames(res))
	}
	if !strings.Contains(res.Solution.Code, "6 * 7") || res.Outputs["answer"] != float64(42) {
		t.Errorf("the winner is not candidate 2: outputs %v", res.Outputs)
	}
	if !hasNote(res, "candidate 2 of 3 passed first") {
		t.Errorf("notes %q", res.Notes)
	}
	var code messages.Usage
	for _, s := range res.Stages {
		if s.Name == messages.StageCode {
			code = code.Add(s.Usage)
		}
	}
	if res.UsageByStage[messages.StageCode] != code || code.Calls != 3 {
		t.Errorf("code usage by stage %+v, from the stage list %+v: want 3 calls, equal", res.UsageByStage[messages.StageCode], code)
	}
}
