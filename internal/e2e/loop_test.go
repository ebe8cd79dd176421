package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

const answerCode = `import argparse
import os


def answer():
    return %s


def main(argv=None):
    argparse.ArgumentParser(description="the answer").parse_args(argv)
    os.makedirs("/var/outputs", exist_ok=True)
    with open("/var/outputs/answer", "w") as f:
        f.write(str(answer()))


if __name__ == "__main__":
    main()
`

func code(expr string) string { return strings.Replace(answerCode, "%s", expr, 1) }

const answerTests = `from solution import answer


def test_answer():
    assert answer() == 42


def test_type():
    assert isinstance(answer(), int)
`

func answerSpec() messages.JobSpec {
	return messages.JobSpec{
		Prompt:  "Compute the answer to everything (42) and write it as the output answer.",
		Outputs: map[string]messages.Type{"answer": messages.TypeInt},
		Options: messages.Options{MaxIterations: 4},
	}
}

// planFirst is spec with the plan as a call of its own: for the tests
// that script the plan call's failures.
func planFirst(spec messages.JobSpec) messages.JobSpec {
	spec.Options.FirstPass = messages.FirstPassPlanFirst
	return spec
}

func scriptBasics(fake *fakellm.Server, solutions ...messages.Solution) {
	scriptWithTests(fake, answerTests, solutions...)
}

func scriptWithTests(fake *fakellm.Server, tests string, solutions ...messages.Solution) {
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "return 42", Approach: "a function and a main block"}))
	var rs []fakellm.Reply
	for _, s := range solutions {
		rs = append(rs, fakellm.JSON(s))
	}
	fake.On("solution", rs...)
	fake.On("tests", fakellm.JSON(messages.Tests{Code: tests}))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}))
}

func sol(c string, pkgs ...string) messages.Solution {
	return messages.Solution{Language: "python", Code: c, Packages: append([]string{}, pkgs...), SystemPackages: []string{}}
}

func TestFirstPassSuccess(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	if !res.Success {
		t.Fatalf("job failed: %s\n%s", res.Error, res.Output)
	}
	if res.Attempts != 1 {
		t.Errorf("attempts = %d, want 1", res.Attempts)
	}
	if got := res.Outputs["answer"]; got != float64(42) {
		t.Errorf("outputs[answer] = %#v, want 42", got)
	}
	if countStage(res, messages.StageDiagnose) != 0 {
		t.Errorf("a first-pass success ran diagnose: %v", stageNames(res))
	}
	if res.LLMCalls < 2 || res.TotalInputTokens == 0 { // code and tests, in one round
		t.Errorf("usage not counted: calls %d, input tokens %d", res.LLMCalls, res.TotalInputTokens)
	}
	// The same job again is answered from the cache: no model call is paid twice.
	before := len(fake.Requests())
	again := runJob(t, st, answerSpec())
	if !again.Success || again.CacheHits == 0 {
		t.Fatalf("second run: success %v, cache hits %d", again.Success, again.CacheHits)
	}
	if n := len(fake.Requests()) - before; n != 0 {
		t.Errorf("identical job made %d model calls, want 0", n)
	}
}

func TestLogicBugFixedInIterationTwo(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 6")), sol(code("6 * 7")))
	fake.On("diagnosis", fakellm.JSON(messages.Diagnosis{Failures: []messages.Failure{{
		TestName: "test_answer", ErrorMessage: "assert 36 == 42", RootCause: "multiplies 6 by 6",
		SuggestedFix: "return 6 * 7", ErrorType: messages.ErrorLogic}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}}))
	fake.On("fix_verification", fakellm.JSON(messages.FixVerification{AllFixesApplied: true, MissingFixes: []string{}}))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	if !res.Success {
		t.Fatalf("job failed: %s\n%s", res.Error, res.Output)
	}
	if res.Attempts != 2 {
		t.Errorf("attempts = %d, want 2 (stages %v)", res.Attempts, stageNames(res))
	}
	if countStage(res, messages.StageFix) != 1 || countStage(res, messages.StagePatchTests) != 0 {
		t.Errorf("stages %v: want one fix and no test patch", stageNames(res))
	}
	if !strings.Contains(res.Solution.Code, "6 * 7") || res.Outputs["answer"] != float64(42) {
		t.Errorf("final code or output wrong: %v", res.Outputs)
	}
	if res.Tests != answerTests {
		t.Error("a logic fix changed the tests")
	}
}

func TestWrongTestIsPatched(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	wrong := answerTests + "\n\ndef test_wrong():\n    assert answer() == 41\n"
	scriptWithTests(fake, wrong, sol(code("6 * 7")))
	fake.On("diagnosis", fakellm.JSON(messages.Diagnosis{Failures: []messages.Failure{{
		TestName: "test_wrong", ErrorMessage: "assert 42 == 41", RootCause: "the test expects 41; the task says 42",
		SuggestedFix: "expect 42", ErrorType: messages.ErrorTestError}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}}))
	fake.On("test_patches", fakellm.JSON(messages.TestPatches{Patches: []messages.TestPatch{{
		TestName: "test_wrong", FixedCode: "def test_wrong():\n    assert answer() == 42\n"}}}))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	if !res.Success {
		t.Fatalf("job failed: %s\n%s", res.Error, res.Output)
	}
	if countStage(res, messages.StagePatchTests) != 1 || countStage(res, messages.StageFix) != 0 {
		t.Errorf("stages %v: want one test patch and no code fix", stageNames(res))
	}
	if !strings.Contains(res.Tests, "assert answer() == 42\n") || strings.Contains(res.Tests, "== 41") {
		t.Errorf("test not patched:\n%s", res.Tests)
	}
	if !strings.Contains(res.Tests, "def test_type():") {
		t.Error("patching removed an untouched test")
	}
}

func TestMissingPackageDiagnosedAsEnvironment(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	buildWheel(t, wheels, "autocoder_probe", "autocoder_probe", "VALUE = 42\n")
	fake := fakellm.New()
	defer fake.Close()
	// The import is dynamic, so the static scan cannot see it: only the test
	// run shows the package is missing.
	scriptBasics(fake, sol(strings.Replace(code(`importlib.import_module("autocoder_" + "probe").VALUE`), "import argparse", "import argparse\nimport importlib", 1)))
	fake.On("diagnosis", fakellm.JSON(messages.Diagnosis{Failures: []messages.Failure{{
		TestName: "test_answer", ErrorMessage: "ModuleNotFoundError: No module named 'autocoder_probe'",
		RootCause: "the autocoder-probe package is not installed", ErrorType: messages.ErrorEnvironment}},
		NeedsPackages: []string{"autocoder-probe"}, NeedsSystemPackages: []string{}}))
	cfg := testConfig(t, fake)
	cfg.PipFindLinks = wheels
	st := startLocal(t, cfg)
	res := runJob(t, st, answerSpec())
	if !res.Success {
		t.Fatalf("job failed: %s\n%s", res.Error, res.Output)
	}
	// The diagnosis was environment: its route is "add packages", nothing else.
	if countStage(res, messages.StageDiagnose) != 1 || countStage(res, messages.StagePatchTests) != 0 {
		t.Errorf("stages %v: want one diagnosis and no test patch", stageNames(res))
	}
	if !slices.Contains(res.Notes, "adding packages: autocoder-probe") {
		t.Errorf("notes %q: want the environment route's note", res.Notes)
	}
	if countStage(res, messages.StageBuild) != 2 || countStage(res, messages.StageFix) != 0 {
		t.Errorf("stages %v: want a rebuild and no code fix", stageNames(res))
	}
	found := false
	for _, p := range res.DetectedPackages {
		found = found || p == "autocoder-probe"
	}
	if !found {
		t.Errorf("detected packages %v lack autocoder-probe", res.DetectedPackages)
	}
}

// scriptNeverPasses scripts a model whose solution always fails its test
// and whose every diagnosis says so.
func scriptNeverPasses(fake *fakellm.Server) {
	scriptBasics(fake, sol(code("6 * 6")))
	fake.On("diagnosis", fakellm.JSON(messages.Diagnosis{Failures: []messages.Failure{{
		TestName: "test_answer", ErrorMessage: "assert 36 == 42", ErrorType: messages.ErrorLogic}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}}))
}

func TestMaxIterationsExhausted(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptNeverPasses(fake)
	spec := answerSpec()
	spec.Options.MaxIterations = 2
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, spec)
	if res.Success {
		t.Fatal("job succeeded with code that never passes")
	}
	if res.Attempts != 2 || !strings.Contains(res.Error, "max_iterations") {
		t.Errorf("attempts %d, error %q", res.Attempts, res.Error)
	}
	if res.Status != messages.StatusFailed {
		t.Errorf("status %s, want failed", res.Status)
	}
}
