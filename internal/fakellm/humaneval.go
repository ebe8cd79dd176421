package fakellm

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/internal/prompts"
	"github.com/autocoder/autocoder/pkg/messages"
)

// HumanEvalMode says how HumanEval answers its problems.
type HumanEvalMode string

const (
	// HumanEvalCanonical answers every problem with its canonical solution
	// and the problem's own tests: a model that is always right.
	HumanEvalCanonical HumanEvalMode = "canonical"
	// HumanEvalPlausibleWrong answers the problems of the wrong-answer table
	// (WrongAnswers) with an off-by-one at a boundary and weak tests that
	// do not reach it; shown surviving mutants, it writes stronger tests
	// that catch it, and asked for a fix, it gives the canonical solution.
	// The other problems it answers as HumanEvalCanonical does.
	HumanEvalPlausibleWrong HumanEvalMode = "plausible-wrong"
)

// ParseHumanEvalMode reads a mode name.
func ParseHumanEvalMode(s string) (HumanEvalMode, error) {
	switch m := HumanEvalMode(s); m {
	case HumanEvalCanonical, HumanEvalPlausibleWrong:
		return m, nil
	}
	return "", fmt.Errorf("fakellm: HumanEval mode %q: want %s or %s", s, HumanEvalCanonical, HumanEvalPlausibleWrong)
}

// WrongAnswer is a plausible but wrong answer to one problem: the canonical
// solution with line Line changed From -> To (an off-by-one HumanEval's own
// tests catch), and weak tests (some of the problem's own checks) that pass
// on it. testdata/gen_wrong.py makes the table; the test
// TestHumanEvalWrongTable regenerates it with -update.
type WrongAnswer struct {
	TaskID      string `json:"task_id"`
	Line        int    `json:"line"`
	From        string `json:"from"`
	To          string `json:"to"`
	Description string `json:"description"`
	WeakTests   string `json:"weak_tests"`
}

// wrongTable is the table for HumanEval (derived from its problems and
// tests: MIT licence, ../shared/datasets/HumanEval.LICENSE).
//
//go:embed humaneval_wrong.json
var wrongTable []byte

// WrongAnswers is the embedded wrong-answer table, by task ID.
func WrongAnswers() (map[string]WrongAnswer, error) {
	var list []WrongAnswer
	if err := json.Unmarshal(wrongTable, &list); err != nil {
		return nil, fmt.Errorf("fakellm: wrong-answer table: %w", err)
	}
	out := make(map[string]WrongAnswer, len(list))
	for _, w := range list {
		out[w.TaskID] = w
	}
	return out, nil
}

// Apply returns the wrong solution made of canonical, or false when the
// line to change is not in it (the table was made from another dataset).
func (w WrongAnswer) Apply(canonical string) (string, bool) {
	lines := strings.Split(canonical, "\n")
	if w.Line < 1 || w.Line > len(lines) || lines[w.Line-1] != w.From {
		return "", false
	}
	lines[w.Line-1] = w.To
	return strings.Join(lines, "\n"), true
}

// HumanEval is a fake model that solves the problems of a problem set: it
// finds the problem a request is about by its prompt in the messages and
// answers each stage (plan, solution, tests, diagnosis, ...) as mode says.
// Use it as a Server's Handle func:
//
//	h, _ := fakellm.NewHumanEval(problems, fakellm.HumanEvalPlausibleWrong)
//	s.Handle(h.Reply)
type HumanEval struct {
	problems []problemset.Problem
	mode     HumanEvalMode
	wrong    map[string]string      // task ID -> wrong solution
	answers  map[string]WrongAnswer // task ID -> its table entry
}

// NewHumanEval returns the fake for problems in mode. Problems need a
// canonical solution.
func NewHumanEval(problems []problemset.Problem, mode HumanEvalMode) (*HumanEval, error) {
	if _, err := ParseHumanEvalMode(string(mode)); err != nil {
		return nil, err
	}
	h := &HumanEval{problems: problems, mode: mode, wrong: map[string]string{}, answers: map[string]WrongAnswer{}}
	for _, p := range problems {
		if p.Canonical() == "" {
			return nil, fmt.Errorf("fakellm: %s has no canonical solution to answer with", p.TaskID)
		}
	}
	if mode != HumanEvalPlausibleWrong {
		return h, nil
	}
	table, err := WrongAnswers()
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		if w, ok := table[p.TaskID]; ok {
			if code, ok := w.Apply(p.Canonical()); ok {
				h.wrong[p.TaskID], h.answers[p.TaskID] = code, w
			}
		}
	}
	return h, nil
}

// Wrong reports whether the fake answers a problem wrong at first.
func (h *HumanEval) Wrong(taskID string) bool {
	_, ok := h.wrong[taskID]
	return ok
}

// Reply answers one request (a Handle func).
func (h *HumanEval) Reply(req Request) Reply {
	text := allContent(req)
	p, ok := h.find(text)
	if !ok {
		return Status(http.StatusBadRequest, "").ErrorMessage("fakellm: HumanEval: no problem of the set in the request")
	}
	wrong, isWrong := h.wrong[p.TaskID]
	switch req.SchemaName {
	case "plan":
		return JSON(messages.Plan{
			Description: fmt.Sprintf("solution.py defines %s as the task's docstring describes.", p.EntryPoint),
			Approach:    fmt.Sprintf("1. Implement %s with the signature given in the task, and the helpers it needs.", p.EntryPoint),
		})
	case "solution":
		code := p.Canonical()
		if isWrong && !isFix(req) {
			code = wrong
		}
		return JSON(messages.Solution{Language: "python", Code: code, Packages: []string{}, SystemPackages: []string{}})
	case "tests":
		return h.tests(p, isWrong, isStrengthen(text))
	case "diagnosis":
		return JSON(h.diagnosis(p, text))
	case "fix_verification":
		return JSON(messages.FixVerification{AllFixesApplied: true, MissingFixes: []string{}, Explanation: "the fix is in"})
	case "test_patches":
		return JSON(messages.TestPatches{Patches: []messages.TestPatch{}})
	case "packages":
		return JSON(messages.Packages{Packages: []string{}})
	}
	return Status(http.StatusBadRequest, "").ErrorMessage(fmt.Sprintf("fakellm: HumanEval: no answer for schema %q", req.SchemaName))
}

// tests are the weak tests of a wrong answer at first, and the problem's
// own tests added to them when shown surviving mutants. A problem answered
// right gets its own tests either way (a strengthening changes nothing). As
// real models do now and then, odd-numbered problems' tests come fenced.
func (h *HumanEval) tests(p problemset.Problem, isWrong, strengthen bool) Reply {
	code := p.HiddenTests()
	if isWrong {
		w := h.answers[p.TaskID]
		code = w.WeakTests
		if strengthen {
			code = w.WeakTests + "\n\n" + strings.TrimPrefix(p.HiddenTests(), "from solution import *\n")
		}
	}
	if last := p.TaskID[len(p.TaskID)-1]; last >= '0' && last <= '9' && (last-'0')%2 == 1 {
		code = "```python\n" + code + "```"
	}
	return JSON(messages.Tests{Code: code})
}

// diagnosis blames the code for every failing test, as a model that trusts
// the task does, and names the line to change back.
func (h *HumanEval) diagnosis(p problemset.Problem, text string) messages.Diagnosis {
	fix := "make " + p.EntryPoint + " follow the docstring at its boundaries"
	if w, ok := h.answers[p.TaskID]; ok {
		fix = fmt.Sprintf("in %s, change `%s` back to `%s`", p.EntryPoint, strings.TrimSpace(w.To), strings.TrimSpace(w.From))
	}
	names := failingTests(text)
	if len(names) == 0 {
		names = []string{"pytest session"}
	}
	d := messages.Diagnosis{NeedsPackages: []string{}, NeedsSystemPackages: []string{}}
	for _, n := range names {
		d.Failures = append(d.Failures, messages.Failure{
			TestName: n, ErrorMessage: "assertion failed", ExpectedBehavior: "what the docstring says",
			ActualBehavior: "an off-by-one at a boundary", RootCause: p.EntryPoint + " is off by one at a boundary",
			SuggestedFix: fix, ErrorType: messages.ErrorLogic,
		})
	}
	return d
}

// find is the problem whose prompt the request quotes; the longest wins
// when one prompt contains another.
func (h *HumanEval) find(text string) (problemset.Problem, bool) {
	best, found := problemset.Problem{}, false
	for _, p := range h.problems {
		if strings.Contains(text, strings.TrimSpace(p.Prompt)) && (!found || len(p.Prompt) > len(best.Prompt)) {
			best, found = p, true
		}
	}
	return best, found
}

func allContent(req Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// isFix tells the fix stage's solution request from the code stage's.
func isFix(req Request) bool {
	for _, m := range req.Messages {
		if m.Role == "system" && strings.Contains(m.Content, "Your job now: fix solution.py") {
			return true
		}
	}
	return false
}

// isStrengthen tells a tests request that shows surviving mutants
// (prompts.StrengthenTests) from the first one.
func isStrengthen(text string) bool { return strings.Contains(text, prompts.SurvivorsHeading) }

var fenceLineRe = regexp.MustCompile("^`{3,}")

// failingTests reads the test IDs the diagnose prompt lists.
func failingTests(text string) []string {
	const label = "Failing tests (copy these names exactly as test_name)"
	i := strings.Index(text, label)
	if i < 0 {
		return nil
	}
	lines := strings.Split(text[i:], "\n")
	var out []string
	inside := false
	for _, l := range lines[1:] {
		if fenceLineRe.MatchString(l) {
			if inside {
				break
			}
			inside = true
			continue
		}
		if inside && strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}
