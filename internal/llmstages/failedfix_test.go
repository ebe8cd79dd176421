package llmstages

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestFixOfAKnownFailureIsAskedAgain: a fix whose code the negative cache
// knows failed these tests is sent back to the model once, in the same
// conversation; both calls are counted. Unchanged code, code the cache
// does not know, and code that failed without a package the next run will
// have (the last run's, or one the fix declares) go through with one call.
func TestFixOfAKnownFailureIsAskedAgain(t *testing.T) {
	t.Parallel()
	const tests = "def test_x(): assert x == 1\n"
	failed := failedRun(t, "x = 2\n", tests, cache.RunEnv{Packages: []string{"numpy"}})
	for _, tc := range []struct {
		name, current, proposed string
		lastRun, declared       string // the last run's packages, the fix's (JSON lists)
		cache                   messages.CacheMode
		wantCalls               int
	}{
		{"back to a failed code", "x = 3\n", "x = 2\n", `["numpy"]`, `[]`, "", 2},
		{"a new code", "x = 3\n", "x = 1\n", `["numpy"]`, `[]`, "", 1},
		{"unchanged (the machine's to catch)", "x = 2\n", "x = 2\n", `["numpy"]`, `[]`, "", 1},
		{"back to a failed code, which lacked a package the last run had", "x = 3\n", "x = 2\n", `["NumPy", "pandas"]`, `[]`, "", 1},
		{"back to a failed code, with a package it lacked", "x = 3\n", "x = 2\n", `["numpy"]`, `["Pandas>=2"]`, "", 1},
		// cache: override and disable read nothing from the cache.
		{"back to a failed code, cache: override", "x = 3\n", "x = 2\n", `["numpy"]`, `[]`, messages.CacheOverride, 1},
		{"back to a failed code, cache: disable", "x = 3\n", "x = 2\n", `["numpy"]`, `[]`, messages.CacheDisable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reply := `{"language":"python","code":"` + strings.TrimSuffix(tc.proposed, "\n") + `\n","packages":` + tc.declared + `,"system_packages":[]}`
			fc := &fakeClient{replies: map[string]string{"solution": reply}}
			h := newHandlers(t, fc, Config{FailedRuns: failed})
			var lastRun []string
			if err := json.Unmarshal([]byte(tc.lastRun), &lastRun); err != nil {
				t.Fatal(err)
			}
			in := messages.FixInput{Task: task, Code: tc.current, Tests: tests, Packages: lastRun,
				Failures: []messages.Failure{{TestName: "test_x", ErrorType: messages.ErrorLogic}}}
			cmd := command(t, messages.StageFix, in)
			cmd.Cache = tc.cache
			out, err := h.Handle(context.Background(), cmd)
			if err != nil {
				t.Fatal(err)
			}
			calls := fc.calls()
			if len(calls) != tc.wantCalls || out.Usage.Calls != tc.wantCalls {
				t.Fatalf("%d calls, usage counts %d: want %d", len(calls), out.Usage.Calls, tc.wantCalls)
			}
			if tc.wantCalls == 1 {
				return
			}
			msgs := calls[1].Messages
			if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content != repeatedFixPrompt {
				t.Errorf("second call ends with %+v, want the repeated-fix prompt", last)
			}
			if prev := msgs[len(msgs)-2]; prev.Role != "assistant" || !strings.Contains(prev.Content, "x = 2") {
				t.Errorf("second call does not carry the failed reply: %+v", prev)
			}
			if len(out.Notes) == 0 || !strings.Contains(out.Notes[0], "already tested") {
				t.Errorf("notes %q: want one saying the fix already failed", out.Notes)
			}
		})
	}
}

// TestFixAskedAgainKeepsItsSystemPrompt: the second call of a fix that went
// back to a failed code carries the job's system prompt prefix once, as
// the first did, not twice.
func TestFixAskedAgainKeepsItsSystemPrompt(t *testing.T) {
	t.Parallel()
	const tests = "def test_x(): assert x == 1\n"
	failed := failedRun(t, "x = 2\n", tests, cache.RunEnv{})
	fc := &fakeClient{replies: map[string]string{"solution": `{"language":"python","code":"x = 2\n","packages":[],"system_packages":[]}`}}
	h := newHandlers(t, fc, Config{FailedRuns: failed})
	cmd := command(t, messages.StageFix, messages.FixInput{Task: task, Code: "x = 3\n", Tests: tests,
		Failures: []messages.Failure{{TestName: "test_x", ErrorType: messages.ErrorLogic}}})
	cmd.Settings = &messages.StageSettings{SystemPromptPrefix: "PREFIX-Q"}
	if _, err := h.Handle(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	calls := fc.calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2", len(calls))
	}
	for i, c := range calls {
		if n := strings.Count(c.Messages[0].Content, "PREFIX-Q"); c.Messages[0].Role != "system" || n != 1 {
			t.Errorf("call %d: the system message has the prefix %d times, want once: %q", i+1, n, c.Messages[0].Content)
		}
	}
}

// failedRun is a negative cache, on a cache of its own, that remembers
// code failing tests in env.
func failedRun(t *testing.T, code, tests string, env cache.RunEnv) cache.FailedRuns {
	t.Helper()
	dir, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	failed := cache.FailedRuns{Cache: dir}
	if err := failed.Remember(t.Context(), code, tests, env); err != nil {
		t.Fatal(err)
	}
	return failed
}
