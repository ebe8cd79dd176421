package sandboxtest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// RunMutation is the suite of sandbox.RunMutation on a backend: real
// HumanEval solutions and their real tests (problems, chosen by the
// caller), then small programs whose mutants are known: a boundary the
// tests miss, an equivalent mutant, a mutant that hangs, a budget that runs
// out, tests that fail, code that does not parse, and code that kills the
// mutation tester. The backend is shared by the subtests and must have
// been able to Build an environment with no packages.
func RunMutation(t *testing.T, b sandbox.Backend, problems []problemset.Problem) {
	t.Helper()
	env, err := b.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	run := func(t *testing.T, mr sandbox.MutationRun) messages.TestStrength {
		t.Helper()
		mr.Env = env.ID
		ts, err := sandbox.RunMutation(t.Context(), b, mr)
		if err != nil {
			t.Fatalf("RunMutation: %v", err)
		}
		if ts.Error == "" {
			checkCounts(t, ts)
		}
		return ts
	}
	t.Run("HumanEval", func(t *testing.T) {
		for _, p := range problems {
			t.Run(strings.ReplaceAll(p.TaskID, "/", "_"), func(t *testing.T) {
				t.Parallel()
				ts := run(t, sandbox.MutationRun{Code: p.Canonical(), Tests: p.HiddenTests(), Seed: 1, Budget: 2 * time.Minute})
				if ts.Error != "" || ts.Mutants == 0 || ts.Killed == 0 {
					t.Errorf("HumanEval's own tests on its canonical solution: %+v", ts)
				}
			})
		}
	})
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, func(*testing.T, sandbox.MutationRun) messages.TestStrength)
	}{
		{"BoundaryMissedHasWitness", testMutationBoundary},
		{"EquivalentMutant", testMutationEquivalent},
		{"HangingMutantKilled", testMutationHang},
		{"BudgetBoundsTheRun", testMutationBudget},
		{"BudgetCutIsNotAKill", testMutationBudgetCut},
		{"SeededSample", testMutationSeeded},
		{"FailingTests", testMutationFailingTests},
		{"UnparsableCode", testMutationUnparsable},
		{"HostileCode", testMutationHostile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, run)
		})
	}
}

// checkCounts checks that a report adds up.
func checkCounts(t *testing.T, ts messages.TestStrength) {
	t.Helper()
	if ts.Killed+ts.Survived+ts.Equivalent+ts.NotRun != ts.Mutants || ts.Mutants > ts.Points || ts.TimedOut > ts.Killed {
		t.Errorf("counts do not add up: %+v", ts)
	}
	if ts.Score < 0 || ts.Score > 1 || (ts.Judged() > 0 && ts.Score != float64(ts.Killed)/float64(ts.Judged())) {
		t.Errorf("score %v for %d killed of %d judged", ts.Score, ts.Killed, ts.Judged())
	}
	if len(ts.Survivors) > min(ts.Survived, sandbox.DefaultMaxSurvivors) {
		t.Errorf("%d survivors listed of %d", len(ts.Survivors), ts.Survived)
	}
	for _, s := range ts.Survivors {
		if !strings.HasPrefix(s.Diff, "--- a/solution.py\n+++ b/solution.py\n") || s.Line == 0 || s.Description == "" {
			t.Errorf("survivor %+v", s)
		}
	}
}

const countAtMost = `def count_at_most(xs, limit):
    """How many of xs are at most limit."""
    return sum(1 for x in xs if x <= limit)
`

// A boundary the tests do not reach survives, with a witness next to
// their own input; tests that reach it kill it.
func testMutationBoundary(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	weak := "from solution import count_at_most\n\n\ndef test_some():\n    assert count_at_most([1, 5, 9], 4) == 1\n"
	ts := run(t, sandbox.MutationRun{Code: countAtMost, Tests: weak})
	var found *messages.SurvivingMutant
	for i, s := range ts.Survivors {
		if s.Description == "<= -> <" {
			found = &ts.Survivors[i]
		}
	}
	if found == nil {
		t.Fatalf("the boundary mutant did not survive weak tests: %+v", ts)
	}
	if !found.Near || !strings.HasPrefix(found.Witness, "count_at_most(") || found.Original == found.Mutant ||
		!strings.Contains(found.Diff, "-    return sum(1 for x in xs if x <= limit)\n+    return sum(1 for x in xs if x < limit)\n") {
		t.Errorf("survivor %+v", *found)
	}
	strong := weak + "\n\ndef test_boundary():\n    assert count_at_most([1, 5, 9], 5) == 2\n"
	ts2 := run(t, sandbox.MutationRun{Code: countAtMost, Tests: strong})
	for _, s := range ts2.Survivors {
		if s.Description == "<= -> <" {
			t.Errorf("the boundary mutant survived a test at the boundary: %+v", ts2)
		}
	}
	if ts2.Score <= ts.Score {
		t.Errorf("score %v with the boundary test, %v without", ts2.Score, ts.Score)
	}
}

// x >= 0 -> x > 0 in absolute value is the same function: equivalent, not
// a survivor to show the model.
func testMutationEquivalent(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	code := "def absolute(x):\n    if x >= 0:\n        return x\n    return -x\n"
	tests := "from solution import absolute\n\n\ndef test_absolute():\n    assert absolute(3) == 3\n    assert absolute(-2) == 2\n    assert absolute(0) == 0\n"
	ts := run(t, sandbox.MutationRun{Code: code, Tests: tests})
	if ts.Equivalent == 0 || ts.ByOperator["boundary"].Equivalent == 0 {
		t.Errorf("no equivalent mutant found: %+v", ts)
	}
	for _, s := range ts.Survivors {
		if s.Description == ">= -> >" {
			t.Errorf("the equivalent mutant is listed as a survivor: %+v", s)
		}
	}
}

// A mutant that loops forever is killed by its timeout, and the run ends.
func testMutationHang(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	code := "def total(n):\n    i = 0\n    s = 0\n    while i < n:\n        s += i\n        i += 1\n    return s\n"
	tests := "from solution import total\n\n\ndef test_total():\n    assert total(4) == 6\n"
	ts := run(t, sandbox.MutationRun{Code: code, Tests: tests, Budget: 2 * time.Minute})
	if ts.TimedOut == 0 || ts.Partial {
		t.Errorf("want a mutant killed by its timeout and a complete run: %+v", ts)
	}
}

// A budget too small for the mutants leaves them not run, and says so.
func testMutationBudget(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	tests := "from solution import count_at_most\n\n\ndef test_some():\n    assert count_at_most([1, 5, 9], 5) == 2\n"
	ts := run(t, sandbox.MutationRun{Code: countAtMost, Tests: tests, Budget: time.Second})
	if !ts.Partial || ts.NotRun == 0 {
		t.Errorf("want a partial run with mutants not run: %+v", ts)
	}
	_, err := sandbox.MutationRunSpec(sandbox.MutationRun{Budget: sandbox.MaxMutateBudget + time.Second})
	if err == nil {
		t.Error("a budget over the bound is accepted")
	}
}

// A mutant the budget cuts off (it waits, without computing, past what is
// left of the budget, and its own wall-clock limit is longer) is not run,
// not killed: the budget, not the mutant, ended it.
func testMutationBudgetCut(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	code := "import time\n\n\ndef f(n):\n    if n > 5:\n        time.sleep(1000)\n    return n\n"
	tests := "from solution import f\n\n\ndef test_f():\n    assert f(5) == 5\n"
	ts := run(t, sandbox.MutationRun{Code: code, Tests: tests, Budget: 8 * time.Second})
	// Every mutant may be cut (the first one sleeps): then nothing was
	// judged, and the measurement says so rather than scoring 1.
	if ts.Error != "" && !strings.HasPrefix(ts.Error, messages.NotJudged) || ts.TimedOut != 0 || ts.NotRun == 0 || !ts.Partial {
		t.Errorf("want the mutant cut by the budget not run, none timed out, the run partial: %+v", ts)
	}
}

// The same seed gives the same mutants; a bound on their count is kept.
func testMutationSeeded(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	code := "def f(a, b):\n    if a < b and b > 0:\n        return a * 2 + b - 1\n    return a % 3 + 4\n"
	tests := "from solution import f\n\n\ndef test_f():\n    assert f(1, 2) == 3\n"
	mr := sandbox.MutationRun{Code: code, Tests: tests, Seed: 7, MaxMutants: 5}
	a, b := run(t, mr), run(t, mr)
	if a.Mutants != 5 || a.Points <= 5 {
		t.Errorf("points %d, mutants %d: want a sample of 5", a.Points, a.Mutants)
	}
	if diff := cmp.Diff(a, b, cmpopts.IgnoreFields(messages.TestStrength{}, "DurationMS")); diff != "" {
		t.Errorf("two runs with one seed differ (-first +second):\n%s", diff)
	}
}

func testMutationFailingTests(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	tests := "from solution import count_at_most\n\n\ndef test_wrong():\n    assert count_at_most([1], 1) == 5\n"
	ts := run(t, sandbox.MutationRun{Code: countAtMost, Tests: tests})
	if !strings.Contains(ts.Error, "the tests do not pass on solution.py") || ts.Killed+ts.Survived != 0 {
		t.Errorf("failing tests: %+v", ts)
	}
}

func testMutationUnparsable(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	ts := run(t, sandbox.MutationRun{Code: "def f(:\n", Tests: "def test_x():\n    pass\n"})
	if !strings.Contains(ts.Error, "does not parse") || ts.Mutants != 0 {
		t.Errorf("unparsable code: %+v", ts)
	}
}

// Code that kills the mutation tester from inside is a report with an
// error, not a hang or a crash of the worker.
func testMutationHostile(t *testing.T, run func(*testing.T, sandbox.MutationRun) messages.TestStrength) {
	code := "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n\ndef f():\n    return 1\n"
	tests := "from solution import f\n\n\ndef test_f():\n    assert f() == 1\n"
	ts := run(t, sandbox.MutationRun{Code: code, Tests: tests, Budget: 30 * time.Second})
	if ts.Error == "" {
		t.Errorf("a killed mutation tester reported no error: %+v", ts)
	}
}
