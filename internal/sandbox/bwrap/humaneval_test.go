package bwrap_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/pkg/messages"
)

var humanEvalAll = flag.Bool("humaneval.all", false, "run all 164 HumanEval problems (default: every 8th)")

// humanEvalProblem is one line of HumanEval.jsonl.
type humanEvalProblem struct {
	TaskID            string `json:"task_id"`
	Prompt            string `json:"prompt"`
	CanonicalSolution string `json:"canonical_solution"`
	Test              string `json:"test"`
	EntryPoint        string `json:"entry_point"`
}

// datasetsDir is AUTOCODER_DATASETS, else ../shared/datasets next to the
// module root.
func datasetsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("AUTOCODER_DATASETS"); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "datasets")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory; set AUTOCODER_DATASETS")
		}
		dir = parent
	}
}

func loadHumanEval(t testing.TB) []humanEvalProblem {
	t.Helper()
	path := filepath.Join(datasetsDir(t), "HumanEval.jsonl")
	f, err := os.Open(path)
	if err != nil {
		// A fresh clone outside CI has no ../shared: say so in one line and
		// let the rest of the suite pass. In CI the dataset is a dependency,
		// and a missing dependency fails the run.
		msg := fmt.Sprintf("HumanEval dataset missing (%v): put HumanEval.jsonl in ../shared/datasets of the module root, "+
			"or set AUTOCODER_DATASETS to its directory", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	defer f.Close()
	var out []humanEvalProblem
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p humanEvalProblem
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no problems", path)
	}
	return out
}

// humanEvalTests is test_solution.py for a problem: its check(candidate),
// called from one pytest test. HumanEval runs prompt, solution and test in
// one namespace, and some checks call the prompt's helpers (poly for
// find_zero), hence the star import.
func humanEvalTests(p humanEvalProblem) string {
	return "from solution import *\nfrom solution import " + p.EntryPoint + "\n\n" + p.Test +
		"\n\ndef test_check():\n    check(" + p.EntryPoint + ")\n"
}

func TestHumanEval(t *testing.T) {
	problems := loadHumanEval(t)
	p := newBackend(t, bwrap.Config{})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, code, tests string) messages.TestReport {
		t.Helper()
		rep, err := sandbox.RunTests(t.Context(), p, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests, Timeout: 60 * time.Second})
		if err != nil {
			t.Fatalf("RunTests: %v", err)
		}
		return rep
	}
	for i, prob := range problems {
		if !*humanEvalAll && i%8 != 0 {
			continue
		}
		t.Run(strings.ReplaceAll(prob.TaskID, "/", "_"), func(t *testing.T) {
			t.Parallel()
			tests := humanEvalTests(prob)
			rep := run(t, prob.Prompt+prob.CanonicalSolution, tests)
			if !rep.OK() || rep.Passed != 1 || len(rep.Cases) != 1 || rep.Cases[0].Name != "test_check" {
				t.Errorf("canonical solution: %+v\n%s", rep, rep.Output)
			}
			broken := prob.Prompt + "    raise NotImplementedError('broken on purpose')\n"
			rep = run(t, broken, tests)
			if rep.OK() || rep.Failed != 1 || len(rep.Cases) != 1 {
				t.Fatalf("broken solution: %+v\n%s", rep, rep.Output)
			}
			c := rep.Cases[0]
			if c.Name != "test_check" || c.Outcome != messages.OutcomeFailed || !strings.Contains(c.Details+c.Message, "NotImplementedError") {
				t.Errorf("broken solution: case %+v", c)
			}
		})
	}
}
