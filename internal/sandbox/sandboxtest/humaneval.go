package sandboxtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// HumanEvalProblem is one line of HumanEval.jsonl.
type HumanEvalProblem struct {
	TaskID            string `json:"task_id"`
	Prompt            string `json:"prompt"`
	CanonicalSolution string `json:"canonical_solution"`
	Test              string `json:"test"`
	EntryPoint        string `json:"entry_point"`
}

// Solution is the problem's canonical solution.py.
func (p HumanEvalProblem) Solution() string { return p.Prompt + p.CanonicalSolution }

// Tests is test_solution.py for the problem: its check(candidate), called
// from one pytest test. HumanEval runs prompt, solution and test in one
// namespace, and some checks call the prompt's helpers (poly for
// find_zero), hence the star import.
func (p HumanEvalProblem) Tests() string {
	return "from solution import *\nfrom solution import " + p.EntryPoint + "\n\n" + p.Test +
		"\n\ndef test_check():\n    check(" + p.EntryPoint + ")\n"
}

// DatasetsDir is AUTOCODER_DATASETS, else ../shared/datasets next to the
// module root.
func DatasetsDir(t testing.TB) string {
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

// HumanEval loads the 164 problems. Outside CI a missing dataset skips the
// test with how to get it; in CI it fails.
func HumanEval(t testing.TB) []HumanEvalProblem {
	t.Helper()
	path := filepath.Join(DatasetsDir(t), "HumanEval.jsonl")
	f, err := os.Open(path)
	if err != nil {
		msg := fmt.Sprintf("HumanEval dataset missing (%v): put HumanEval.jsonl in ../shared/datasets of the module root, "+
			"or set AUTOCODER_DATASETS to its directory", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	defer f.Close()
	var out []HumanEvalProblem
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p HumanEvalProblem
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
