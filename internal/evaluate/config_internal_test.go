package evaluate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestJobOptionsFitTheBackend: the jobs' options validate for the
// pipeline and for the agent backend, which refuses max_iterations (it
// is bounded by agent_max_turns): the default is left out there.
func TestJobOptionsFitTheBackend(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]string{nil, {"backend=agent"}, {"backend=agent", "agent_max_turns=20"}} {
		o, err := Config{Options: opts}.jobOptions()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(map[string]any{"prompt": "p", "outputs": map[string]string{"a": "int"}, "options": o})
		if _, err := messages.DecodeJobSpecJSON(raw); err != nil {
			t.Errorf("options %v: %v", o, err)
		}
	}
}

// TestTasksAskedForAreRunOrRefused: a --task that names no problem, or one
// --every leaves out, is an error naming it, not a problem dropped in
// silence.
func TestTasksAskedForAreRunOrRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "problems.jsonl")
	var lines []string
	for i := range 3 {
		b, _ := json.Marshal(map[string]string{"task_id": fmt.Sprintf("T/%d", i), "prompt": "def f():\n", "canonical_solution": "    return 1\n",
			"test": "def check(candidate):\n    assert candidate() == 1\n", "entry_point": "f"})
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ps, err := selectProblems(Config{Problems: path, Every: 1, Tasks: []string{"T/0", "T/2"}}); err != nil || len(ps) != 2 {
		t.Fatalf("two tasks: %d problems, %v", len(ps), err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Problems: path, Every: 1, Tasks: []string{"T/0", "T/9"}}, "--task T/9: no such problem"},
		{Config{Problems: path, Every: 2, Tasks: []string{"T/0", "T/1"}}, "--task T/1: left out by --every 2"},
	} {
		if _, err := selectProblems(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tasks %v every %d: %v, want %q", tc.cfg.Tasks, tc.cfg.Every, err, tc.want)
		}
	}
}

// TestHiddenErrorIsNotAFalseSuccess: a job whose hidden tests eval could
// not run is not judged a false success; it is counted apart.
func TestHiddenErrorIsNotAFalseSuccess(t *testing.T) {
	t.Parallel()
	rows := map[string]Row{
		"a": {Success: true, Hidden: HiddenError},
		"b": {Success: true, Hidden: HiddenFailed},
		"c": {Success: true, Hidden: HiddenPassed},
	}
	s := Summarize([]string{"a", "b", "c"}, rows)
	if s.FalseSuccess != 1 || s.HiddenErrors != 1 || s.Successes != 3 {
		t.Errorf("false successes %d, hidden errors %d, successes %d; want 1, 1, 3", s.FalseSuccess, s.HiddenErrors, s.Successes)
	}
}

// TestBadOptionRefusedBeforeAnyRow: an --option the job spec refuses is a
// Validate error naming the field (ParseArgs returns it before Run writes
// a row or settings.json), not an errored row per problem.
func TestBadOptionRefusedBeforeAnyRow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{[]string{"min_test_strength=2"}, "options.min_test_strength"},
		{[]string{"mutation=off", "max_mutants=10"}, "options.max_mutants"},
		{[]string{"no_such_option=1"}, "no_such_option"},
	} {
		c := Config{Options: tc.opts, Parallel: 1, Every: 1}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--option %v: %v, want an error naming %s", tc.opts, err, tc.want)
		}
	}
}

// TestPassAt1LeavesOutHiddenErrors: pass@1 is over the problems whose
// hidden tests ran (or had no script to run on), not those eval could not
// judge.
func TestPassAt1LeavesOutHiddenErrors(t *testing.T) {
	t.Parallel()
	rows := map[string]Row{
		"a": {Success: true, Hidden: HiddenPassed},
		"b": {Success: true, Hidden: HiddenError},
		"c": {Success: false, Hidden: HiddenNone},
	}
	s := Summarize([]string{"a", "b", "c"}, rows)
	if s.PassAt1() != 0.5 || s.Judged() != 2 {
		t.Errorf("pass@1 %v over %d, want 0.5 over 2", s.PassAt1(), s.Judged())
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, "t", []string{"a", "b", "c"}, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| pass@1 on hidden tests | 50.0% (1 of 2) |") {
		t.Errorf("markdown:\n%s", b.String())
	}
}
