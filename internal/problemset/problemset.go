package problemset

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Bounds of a problem set.
const (
	MaxProblems    = 10000
	maxLineBytes   = 4 << 20
	maxFieldBytes  = 1 << 20
	HumanEvalFile  = "HumanEval.jsonl"
	datasetsEnv    = "AUTOCODER_DATASETS"
	datasetsRelDir = "../shared/datasets"
)

// Problem is one line of a problem set: HumanEval's format. Test defines
// check(candidate), which the hidden tests call with the entry point;
// CanonicalSolution, if any, is a body that completes Prompt.
type Problem struct {
	TaskID            string `json:"task_id"`
	Prompt            string `json:"prompt"`
	EntryPoint        string `json:"entry_point"`
	Test              string `json:"test"`
	CanonicalSolution string `json:"canonical_solution,omitempty"`
}

// Canonical is the problem's canonical solution.py: the prompt completed by
// the canonical body ("" when the set has none).
func (p Problem) Canonical() string {
	if p.CanonicalSolution == "" {
		return ""
	}
	return p.Prompt + p.CanonicalSolution
}

// HiddenTests is test_solution.py for the problem's own tests: its
// check(candidate), called from one pytest test, test_check. HumanEval runs
// prompt, solution and test in one namespace, and some checks call the
// prompt's helpers (poly for find_zero), hence the star import.
func (p Problem) HiddenTests() string {
	return "from solution import *\nfrom solution import " + p.EntryPoint + "\n\n" + p.Test +
		"\n\ndef test_check():\n    check(" + p.EntryPoint + ")\n"
}

// Validate checks the fields every problem needs.
func (p Problem) Validate() error {
	switch {
	case strings.TrimSpace(p.TaskID) == "":
		return errors.New("task_id is empty")
	case strings.TrimSpace(p.Prompt) == "":
		return fmt.Errorf("%s: prompt is empty", p.TaskID)
	case !messages.ValidName(p.EntryPoint):
		return fmt.Errorf("%s: entry_point %q is not a Python identifier", p.TaskID, p.EntryPoint)
	case !strings.Contains(p.Test, "def check("):
		return fmt.Errorf("%s: test does not define check(candidate)", p.TaskID)
	}
	for name, v := range map[string]string{"prompt": p.Prompt, "test": p.Test, "canonical_solution": p.CanonicalSolution} {
		if len(v) > maxFieldBytes {
			return fmt.Errorf("%s: %s is %s, over the %s bound", p.TaskID, name, messages.FormatBytes(int64(len(v))), messages.FormatBytes(maxFieldBytes))
		}
	}
	return nil
}

// Read reads a problem set: one JSON object a line (blank lines skipped),
// each valid, task IDs unique, at most MaxProblems.
func Read(r io.Reader) ([]Problem, error) {
	var out []Problem
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	n := 1
	for ; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var p Problem
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if seen[p.TaskID] {
			return nil, fmt.Errorf("line %d: task_id %q appears twice", n, p.TaskID)
		}
		seen[p.TaskID] = true
		if len(out) == MaxProblems {
			return nil, fmt.Errorf("line %d: more than %d problems", n, MaxProblems)
		}
		out = append(out, p)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d: longer than %d bytes", n, maxLineBytes)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no problems")
	}
	return out, nil
}

// Load reads the problem set at path.
func Load(path string) ([]Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("problem set: %w", err)
	}
	defer f.Close()
	ps, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("problem set %s: %w", path, err)
	}
	return ps, nil
}

// DefaultPath is where HumanEval is looked for: $AUTOCODER_DATASETS, else
// ../shared/datasets beside the module root above dir (a checkout's), else
// ../shared/datasets from dir.
func DefaultPath(dir string) string {
	if d := os.Getenv(datasetsEnv); d != "" {
		return filepath.Join(d, HumanEvalFile)
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, datasetsRelDir, HumanEvalFile)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return filepath.Join(dir, datasetsRelDir, HumanEvalFile)
		}
		d = parent
	}
}

// TaskPrompt is the job prompt that asks for the problem's solution.py.
func (p Problem) TaskPrompt() string {
	return "Complete the Python function " + p.EntryPoint + " below, in solution.py: keep its signature and docstring, " +
		"implement its body, and keep the imports and helper functions it needs. solution.py is a module that defines " +
		"this function; it reads no input files and writes no outputs.\n\n" + p.Prompt
}
