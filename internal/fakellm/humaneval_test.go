package fakellm_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/pkg/messages"
)

var update = flag.Bool("update", false, "regenerate humaneval_wrong.json in the sandbox (testdata/gen_wrong.py)")

// humanEval loads HumanEval; outside CI a missing dataset is a skip.
func humanEval(t *testing.T) []problemset.Problem {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	path := problemset.DefaultPath(dir)
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
	return ps
}

func sandboxBackend(t *testing.T) sandbox.Backend {
	t.Helper()
	b, err := bwrap.New(bwrap.Config{Python: "/usr/bin/python3", StateDir: t.TempDir()})
	if err != nil {
		t.Fatalf("bubblewrap backend: %v (scripts/setup.sh installs it)", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestHumanEvalWrongTable checks the wrong-answer table against the
// dataset and, in the sandbox, that every 8th entry is what it claims:
// weak tests that pass on the canonical and the wrong solution, hidden
// tests that fail on the wrong one. With -update it makes the table anew.
func TestHumanEvalWrongTable(t *testing.T) {
	ps := humanEval(t)
	b := sandboxBackend(t)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		regenerate(t, b, env.ID, ps)
	}
	table, err := fakellm.WrongAnswers()
	if err != nil {
		t.Fatal(err)
	}
	if len(table) < 100 {
		t.Errorf("%d wrong answers for %d problems: want most problems covered", len(table), len(ps))
	}
	i := 0
	for _, p := range ps {
		w, ok := table[p.TaskID]
		if !ok {
			continue
		}
		wrong, ok := w.Apply(p.Canonical())
		if !ok {
			t.Errorf("%s: line %d is not %q in the canonical solution", p.TaskID, w.Line, w.From)
			continue
		}
		if i++; i%8 != 1 {
			continue
		}
		run := func(code, tests string) messages.TestReport {
			rep, err := sandbox.RunTests(t.Context(), b, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		if rep := run(p.Canonical(), w.WeakTests); !rep.OK() {
			t.Errorf("%s: weak tests fail on the canonical solution: %s", p.TaskID, rep.Output)
		}
		if rep := run(wrong, w.WeakTests); !rep.OK() {
			t.Errorf("%s: weak tests catch the wrong solution (%s): %s", p.TaskID, w.Description, rep.Output)
		}
		if rep := run(wrong, p.HiddenTests()); rep.OK() {
			t.Errorf("%s: HumanEval's tests pass on the wrong solution (%s)", p.TaskID, w.Description)
		}
	}
}

func regenerate(t *testing.T, b sandbox.Backend, env string, ps []problemset.Problem) {
	t.Helper()
	problems, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"problems.json": problems}
	for name, path := range map[string]string{".harness/mutate.py": "../sandbox/mutate.py", "gen_wrong.py": "testdata/gen_wrong.py"} {
		if files[name], err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env, Files: files, Argv: []string{"python", "gen_wrong.py"},
		Timeout: 10 * time.Minute, Memory: 1 << 30, Collect: []string{".harness/wrong.json"}})
	if err != nil {
		t.Fatal(err)
	}
	out, ok := res.Files[".harness/wrong.json"]
	if res.ExitCode != 0 || !ok {
		t.Fatalf("gen_wrong.py exited %d:\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if err := os.WriteFile(filepath.Join("humaneval_wrong.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Fatal("humaneval_wrong.json regenerated: rebuild and run the test again without -update")
}

// TestHumanEvalAnswersTheRealPrompts sends the stages' real prompts for a
// problem of the wrong-answer table over HTTP and reads each answer.
func TestHumanEvalAnswersTheRealPrompts(t *testing.T) {
	ps := humanEval(t)
	table, err := fakellm.WrongAnswers()
	if err != nil {
		t.Fatal(err)
	}
	var p problemset.Problem
	for _, q := range ps {
		if _, ok := table[q.TaskID]; ok {
			p = q
			break
		}
	}
	w := table[p.TaskID]
	wrongCode, _ := w.Apply(p.Canonical())
	task := messages.TaskSpec{Prompt: p.TaskPrompt()}
	plan := messages.Plan{Description: "d", Approach: "a"}
	for _, mode := range []fakellm.HumanEvalMode{fakellm.HumanEvalCanonical, fakellm.HumanEvalPlausibleWrong} {
		h, err := fakellm.NewHumanEval(ps, mode)
		if err != nil {
			t.Fatal(err)
		}
		s, hc := start(t)
		s.Handle(h.Reply)
		ask := func(schema string, msgs []messages.ChatMessage, into any) {
			t.Helper()
			body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs,
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": schema, "strict": true, "schema": map[string]any{}}}})
			c, _ := content(t, post(t, hc, s, string(body)))
			if err := json.Unmarshal([]byte(c), into); err != nil {
				t.Fatalf("%s reply %q: %v", schema, c, err)
			}
		}
		wrong := mode == fakellm.HumanEvalPlausibleWrong
		var sol messages.Solution
		ask("solution", prompts.Code(messages.CodeInput{Task: task, Plan: plan}), &sol)
		if want := map[bool]string{false: p.Canonical(), true: wrongCode}[wrong]; sol.Code != want {
			t.Errorf("%s: code stage answered\n%s", mode, sol.Code)
		}
		var tests messages.Tests
		ask("tests", prompts.Tests(messages.TestsInput{Task: task, Plan: plan}), &tests)
		if got := strings.Contains(tests.Code, "def test_check():"); got == wrong || (wrong && !strings.Contains(tests.Code, "def test_example_")) {
			t.Errorf("%s: first tests\n%s", mode, tests.Code)
		}
		var strong messages.Tests
		ask("tests", prompts.StrengthenTests(messages.StrengthenTestsInput{Task: task, Plan: plan, Code: sol.Code, Tests: tests.Code,
			Strength: messages.TestStrength{Mutants: 3, Killed: 2, Survived: 1}}), &strong)
		if !strings.Contains(strong.Code, "def test_check():") || !strings.Contains(unfence(strong.Code), unfence(tests.Code)) {
			t.Errorf("%s: stronger tests keep the first ones and add HumanEval's:\n%s", mode, strong.Code)
		}
		var d messages.Diagnosis
		ask("diagnosis", prompts.Diagnose(messages.DiagnoseInput{Task: task, Plan: plan, Code: sol.Code, Tests: strong.Code,
			Report: messages.TestReport{Passed: 1, Failed: 1, ExitCode: 1, Cases: []messages.TestCase{{Name: "test_check", ClassName: "test_solution", Outcome: messages.OutcomeFailed}}}}), &d)
		if len(d.Failures) != 1 || d.Failures[0].TestName != "test_check" || d.Failures[0].ErrorType != messages.ErrorLogic {
			t.Errorf("%s: diagnosis %+v", mode, d)
		}
		var fixed messages.Solution
		ask("solution", prompts.Fix(messages.FixInput{Task: task, Plan: plan, Code: sol.Code, Tests: strong.Code, Failures: d.Failures}), &fixed)
		if fixed.Code != p.Canonical() {
			t.Errorf("%s: the fix is not the canonical solution:\n%s", mode, fixed.Code)
		}
	}
}

// unfence drops the Markdown fence the fake puts around some tests, as the
// tests stage does.
func unfence(code string) string {
	return strings.TrimSuffix(strings.TrimPrefix(code, "```python\n"), "```")
}
