package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// humanEvalProblem is one line of HumanEval.jsonl.
type humanEvalProblem struct {
	TaskID            string `json:"task_id"`
	Prompt            string `json:"prompt"`
	CanonicalSolution string `json:"canonical_solution"`
	Test              string `json:"test"`
	EntryPoint        string `json:"entry_point"`
}

// loadHumanEval reads the first n problems of the dataset
// (AUTOCODER_DATASETS, else ../shared/datasets beside the module root).
// A missing dataset fails in CI and skips elsewhere, as the sandbox's
// HumanEval suite does.
func loadHumanEval(b *testing.B, n int) []humanEvalProblem {
	b.Helper()
	dir := os.Getenv("AUTOCODER_DATASETS")
	if dir == "" {
		dir = filepath.Join(moduleRoot(b), "..", "shared", "datasets")
	}
	path := filepath.Join(dir, "HumanEval.jsonl")
	f, err := os.Open(path)
	if err != nil {
		msg := fmt.Sprintf("HumanEval dataset missing (%v): set AUTOCODER_DATASETS to the directory of HumanEval.jsonl", err)
		if os.Getenv("CI") != "" {
			b.Fatal(msg)
		}
		b.Skip(msg)
	}
	defer f.Close()
	var out []humanEvalProblem
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() && len(out) < n {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p humanEvalProblem
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			b.Fatalf("%s: %v", path, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil || len(out) == 0 {
		b.Fatalf("%s: %d problems read: %v", path, len(out), err)
	}
	return out
}

// key names a problem in its job's prompt, for the fake model's book.
func (p humanEvalProblem) key() string { return "(" + p.TaskID + ")" }

// code is the canonical solution as solution.py: the prompt (imports,
// signature, docstring, helpers) and the body.
func (p humanEvalProblem) code() string { return p.Prompt + p.CanonicalSolution }

// tests is test_solution.py: the problem's check(candidate), called from
// one pytest test, as the sandbox's HumanEval suite writes it.
func (p humanEvalProblem) tests() string {
	return "from solution import *\nfrom solution import " + p.EntryPoint + "\n\n" + p.Test +
		"\n\ndef test_check():\n    check(" + p.EntryPoint + ")\n"
}

// spec is the problem's job: complete the function. No outputs and no
// samples, so a passing test run finishes the job (no acceptance run).
func (p humanEvalProblem) spec(firstPass messages.FirstPass) messages.JobSpec {
	return messages.JobSpec{
		Name:   "humaneval-" + strings.ReplaceAll(strings.ToLower(p.TaskID), "humaneval/", ""),
		Prompt: "Complete the Python function " + p.EntryPoint + " below " + p.key() + ", keeping its name and signature.\n\n```python\n" + p.Prompt + "```\n",
		// Every run does the work: no stage is answered from the cache.
		// No mutation testing (on by default for pipeline jobs): it is
		// not what is measured here (BENCHMARKS.md's strength section is).
		Options: messages.Options{MaxIterations: 2, Cache: messages.CacheDisable, FirstPass: firstPass, Mutation: messages.MutationOff},
	}
}

// humanEvalBook is the fake model's book of the problems: each answered
// with its canonical solution, its check as the tests and a plan, with
// real models' quirks (a one-round reply in five leaves the plan out, a
// reply in three comes in prose around a fence).
func humanEvalBook(problems []humanEvalProblem, delay time.Duration) *fakellm.Book {
	book := fakellm.NewBook(fakellm.Quirks{OmitPlanEvery: 5, ProseEvery: 3, Delay: delay})
	for _, p := range problems {
		book.Add(fakellm.Problem{Key: p.key(), Code: p.code(), Tests: p.tests(),
			Plan: messages.Plan{Description: "Implement " + p.EntryPoint + " as its docstring says.", Approach: "1. " + p.EntryPoint + " as declared; no other public function."}})
	}
	return book
}

// barePytest runs each problem's test file on its canonical solution with
// bare pytest, one after another, as the sandbox runs it (same options,
// JUnit XML written), and returns the total time. Any failure fails b:
// the baseline must pass what the jobs pass.
func barePytest(b *testing.B, problems []humanEvalProblem) time.Duration {
	b.Helper()
	root := b.TempDir()
	dirs := make([]string, len(problems))
	for i, p := range problems {
		dirs[i] = filepath.Join(root, fmt.Sprint(i))
		for name, content := range map[string]string{"solution.py": p.code(), "test_solution.py": p.tests()} {
			if err := os.MkdirAll(dirs[i], 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dirs[i], name), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	start := time.Now()
	for i, dir := range dirs {
		cmd := exec.Command(python, "-m", "pytest", "test_solution.py", "-q", "-p", "no:cacheprovider",
			"--junitxml="+filepath.Join(dir, "junit.xml"), "-o", "junit_family=xunit2", "-o", "addopts=",
			"--rootdir="+dir, "--tb=short", "--color=no", "-rfE")
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bare pytest of %s: %v\n%s", problems[i].TaskID, err, out)
		}
	}
	return time.Since(start)
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot(b testing.TB) string {
	b.Helper()
	dir, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			b.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}
