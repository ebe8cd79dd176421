package prompts

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

func TestWithDocs(t *testing.T) {
	t.Parallel()
	msgs := Plan(messages.PlanInput{Task: task})
	if got := WithDocs(msgs, nil, true); len(got) != len(msgs) {
		t.Fatalf("no chunks changed the conversation: %d messages", len(got))
	}
	got := WithDocs(msgs, []DocChunk{{File: "docs/a.md", Index: 2, Heading: "Values", Text: "hex " + injection}}, true)
	if len(got) != 3 || got[0] != msgs[0] || got[2] != msgs[1] || got[1].Role != "user" {
		t.Fatalf("docs are not one user message before the task's: %+v", got)
	}
	docs := got[1].Content
	for _, want := range []string{"docs/a.md, part 2 (Values) " + DataLabel, "most relevant to this step"} {
		if !strings.Contains(docs, want) {
			t.Errorf("docs message lacks %q:\n%s", want, docs)
		}
	}
	assertFenced(t, docs)
}

func TestReflectRun(t *testing.T) {
	t.Parallel()
	in := messages.FixInput{Task: task, Plan: plan, Code: "print(1)\n", Reflect: true,
		Failures: []messages.Failure{{TestName: "script_run", ErrorMessage: "solution.py exited with code 1: KeyError: 'x'", ActualBehavior: "exit code 1; output (tail):\nKeyError: 'x'"}}}
	user := Fix(in)[1].Content
	system := Fix(in)[0].Content
	for _, want := range []string{"KeyError: 'x'", "## The failed run", "failed when run"} {
		if !strings.Contains(user, want) {
			t.Errorf("reflection prompt lacks %q:\n%s", want, user)
		}
	}
	if !strings.Contains(system, "There are no tests: the run itself is the check") || strings.Contains(user, "read-only: the tests") {
		t.Error("the reflection prompt speaks of tests")
	}
	if withTests := Fix(messages.FixInput{Task: task, Code: "x", Failures: in.Failures})[0].Content; strings.Contains(withTests, "There are no tests") {
		t.Error("a fix without Reflect is the reflection turn")
	}
}

// assertFenced checks that the injection stays inside a data fence.
func assertFenced(t *testing.T, s string) {
	t.Helper()
	i := strings.Index(s, "INJECT-7f3a")
	fenceStart := strings.LastIndex(s[:i], "\n```")
	if fenceStart < 0 || !strings.Contains(s[fenceStart:i], "````") {
		t.Errorf("the injection is not inside a fence longer than its backtick runs:\n%s", s)
	}
}
