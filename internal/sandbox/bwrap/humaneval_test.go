package bwrap_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
	"github.com/autocoder/autocoder/pkg/messages"
)

var humanEvalAll = flag.Bool("humaneval.all", false, "run all 164 HumanEval problems (default: every 8th)")

// humanEvalProblem is one line of HumanEval.jsonl.
type humanEvalProblem = problemset.Problem

// loadHumanEval reads HumanEval (sandboxtest.HumanEval: skipped outside
// CI when the dataset is missing, failed in CI).
func loadHumanEval(t testing.TB) []humanEvalProblem { return sandboxtest.HumanEval(t) }

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
			tests := prob.HiddenTests()
			rep := run(t, prob.Canonical(), tests)
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
