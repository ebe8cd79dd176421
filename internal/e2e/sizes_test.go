package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Hostile sizes (issue 14): every one ends the job, with a reason that
// names the bound, or succeeds. Before the claim check (internal/bus
// claimcheck.go) each of these left its job running forever: the result
// was over the broker's 1 MiB payload, its publish failed on every
// delivery and the command was dropped.

// requireBoundedFailure checks that res is a failed job whose error names
// the job-state bound, or a success.
func requireEnded(t *testing.T, res *messages.Result, wants ...string) {
	t.Helper()
	if res.Status != messages.StatusFailed && res.Status != messages.StatusSucceeded {
		t.Fatalf("status %s: want the job ended", res.Status)
	}
	if res.Success {
		return
	}
	for _, want := range wants {
		if !strings.Contains(res.Error, want) {
			t.Errorf("error %q does not say %q", res.Error, want)
		}
	}
}

// TestMultiMegabyteModelReplyEndsTheJob: a 1.5 MB solution (under the
// 4 MiB reply cap, over the broker's payload) reaches the coordinator by
// claim check; too large for the job state, its stage fails naming that
// bound and the job ends.
func TestMultiMegabyteModelReplyEndsTheJob(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	padding := "# " + strings.Repeat("padding ", 190_000) + "\n"
	scriptBasics(fake, sol(padding+code("6 * 7")))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	if res.Success {
		t.Fatal("a 1.5 MB solution succeeded; want its stage failed at the job-state bound")
	}
	requireEnded(t, res, "stage code failed", "over the 1008 KiB bound of one stored job")
}

// TestThirtyThousandTestFileEndsTheJob: a test file of 30,000 tests (1.6 MB)
// ends the job naming the bound it crossed.
func TestThirtyThousandTestFileEndsTheJob(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	var tests strings.Builder
	tests.WriteString("from solution import answer\n")
	for i := range 30_000 {
		fmt.Fprintf(&tests, "\n\ndef test_answer_%05d():\n    assert answer() == 42\n", i)
	}
	scriptWithTests(fake, tests.String(), sol(code("6 * 7")))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	requireEnded(t, res, "stage tests failed", "bound of one stored job")
}

// hugeReportTests passes its one real test, then, as the interpreter
// exits, replaces pytest's JUnit report with one of 100,000 passing cases
// (the size a parametrised test file gives, without the minutes of
// running them).
const hugeReportTests = `import atexit
import os

from solution import answer


def _huge_report():
    path = "/workspace/.harness/junit.xml"
    with open(path, "w") as f:
        f.write('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">')
        for i in range(100000):
            f.write('<testcase classname="test_solution" name="test_answer[%d]" time="0.001" />' % i)
        f.write("</testsuite></testsuites>")


atexit.register(_huge_report)


def test_answer():
    assert answer() == 42
`

// TestHundredThousandCaseReportEndsTheJob: a report of 100,000 cases is
// bounded at the sandbox-worker (its counts kept, its cases cut, a note
// says so) and the job succeeds.
func TestHundredThousandCaseReportEndsTheJob(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptWithTests(fake, hugeReportTests, sol(code("6 * 7")))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	if !res.Success {
		t.Fatalf("job failed: %s", res.Error)
	}
	counted := false
	for _, s := range res.Stages {
		counted = counted || s.Name == messages.StageRunTests && strings.Contains(s.Outcome, "100000 passed")
	}
	if !counted {
		t.Errorf("no run_tests stage counted the 100000 cases: %+v", res.Stages)
	}
}
