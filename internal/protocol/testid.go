package protocol

import (
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// SessionTest is the test name of a run that failed as a whole (timeout,
// collection error) without a failing test case: pytest names a collection
// error after the test module.
const SessionTest = TestModule

// TestID names a test case as prompts, diagnoses and test patches do:
// "test_x" for a module-level test and "TestX::test_x" for a method, with
// any parameter suffix kept ("test_x[2-3]"). pytest's JUnit classname is
// "test_solution" or "test_solution.TestX"; a collection error has an empty
// classname and the module as its name.
func TestID(c messages.TestCase) string {
	cls := c.ClassName
	if i := strings.LastIndex(cls, TestModule); i >= 0 {
		cls = strings.TrimPrefix(cls[i+len(TestModule):], ".")
	} else if i := strings.LastIndexByte(cls, '.'); i >= 0 {
		// Some other module path: keep only a trailing class name.
		cls = cls[i+1:]
		if !strings.HasPrefix(cls, "Test") {
			cls = ""
		}
	} else if !strings.HasPrefix(cls, "Test") {
		cls = ""
	}
	if cls == "" {
		return c.Name
	}
	return strings.ReplaceAll(cls, ".", "::") + "::" + c.Name
}

// Failing reports whether the case failed or errored.
func Failing(c messages.TestCase) bool {
	return c.Outcome == messages.OutcomeFailed || c.Outcome == messages.OutcomeError
}

// FailingTests returns the IDs (see TestID) of the report's failed and
// errored cases, in report order, without duplicates.
func FailingTests(r messages.TestReport) []string {
	var ids []string
	seen := map[string]bool{}
	for _, c := range r.Cases {
		if !Failing(c) {
			continue
		}
		id := TestID(c)
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}
