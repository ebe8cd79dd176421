package e2e

import (
	"slices"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// skip_tests (issue 5): the code, its packages and its image, and no tests.
// The job succeeds once the image is built: success means "built", and the
// result says the tests were skipped. Nothing runs the script either (the
// acceptance run belongs to the tested path).
func TestSkipTests(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	buildWheel(t, wheels, "autocoder_skipprobe", "autocoder_skipprobe", "VALUE = 42\n")
	fake := fakellm.New()
	defer fake.Close()
	// The code imports a package only the wheel provides: the environment
	// must be built with it.
	c := "import autocoder_skipprobe\n" + code("autocoder_skipprobe.VALUE")
	scriptBasics(fake, sol(c, "autocoder-skipprobe"))
	cfg := testConfig(t, fake)
	cfg.PipFindLinks = wheels
	st := startLocal(t, cfg)
	spec := answerSpec()
	spec.Options.SkipTests = true
	res := runJob(t, st, spec)

	if !res.Success || res.Status != messages.StatusSucceeded || res.Error != "" {
		t.Fatalf("job: success %v, status %s, error %q; stages %v", res.Success, res.Status, res.Error, stageNames(res))
	}
	if got, want := stageNames(res), []string{"code", "build"}; !slices.Equal(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	if !res.SkippedTests {
		t.Error("the result does not say the tests were skipped")
	}
	if !hasNote(res, "skip_tests: no tests were generated or run") {
		t.Errorf("notes %q lack the skip_tests note", res.Notes)
	}
	if res.Tests != "" || res.Attempts != 0 || len(res.Outputs) != 0 {
		t.Errorf("tests %q, attempts %d, outputs %v: want no tests, no test run, no acceptance run", res.Tests, res.Attempts, res.Outputs)
	}
	for _, r := range fake.Requests() {
		if r.SchemaName == "tests" {
			t.Error("the model was asked for tests")
		}
	}
	if res.Solution == nil || res.Solution.Code != c || res.Image == "" || !slices.Contains(res.DetectedPackages, "autocoder-skipprobe") {
		t.Errorf("solution %v, image %q, packages %v: want the code, its image and its package", res.Solution != nil, res.Image, res.DetectedPackages)
	}
	// The sandbox's own Python reported its standard library at the build.
	if hasNote(res, "CPython 3.11's list") {
		t.Errorf("the build did not report the sandbox's stdlib: %q", res.Notes)
	}
}
