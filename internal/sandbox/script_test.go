package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScriptRunSpec(t *testing.T) {
	spec, err := ScriptRunSpec(ScriptRun{Env: "e", Code: "print(1)", Args: map[string]string{
		"threshold": "-0.5", "name": "a b; $(rm -rf /)", "count": "3", "empty": "",
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"python", "solution.py", "--count", "3", "--empty", "", "--name", "a b; $(rm -rf /)", "--threshold=-0.5"}
	if diff := cmp.Diff(want, spec.Argv); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
	if !spec.CollectOutputs || string(spec.Files["solution.py"]) != "print(1)" {
		t.Errorf("spec = %+v", spec)
	}
	for _, bad := range []string{"--x", "a-b", "1x", "a b", ""} {
		if _, err := ScriptRunSpec(ScriptRun{Args: map[string]string{bad: "v"}}); err == nil {
			t.Errorf("argument name %q accepted", bad)
		}
	}
}

func TestTestRunSpec(t *testing.T) {
	spec := TestRunSpec(TestRun{Env: "e", Code: "c", Tests: "t"})
	if string(spec.Files[SolutionFile]) != "c" || string(spec.Files[TestFile]) != "t" {
		t.Errorf("files = %v", spec.Files)
	}
	if diff := cmp.Diff([]string{JUnitFile}, spec.Collect); diff != "" {
		t.Errorf("collect (-want +got):\n%s", diff)
	}
	if spec.Argv[0] != "python" || spec.EnvVars["PYTHONDONTWRITEBYTECODE"] != "1" {
		t.Errorf("spec = %+v", spec)
	}
}
