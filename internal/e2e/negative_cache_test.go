package e2e

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestFixNeverProposesAFailedCodeAgain: the code (6 * 6) fails, its fix
// (6 * 5) fails, and the next fix goes back to 6 * 6. The negative cache
// (cache.FailedRuns, filled by the sandbox-worker) knows that code failed
// these tests: the fix stage asks the model for a different one in the
// same call, and the loop never runs 6 * 6 again. Before, it was tested
// again, found to repeat iteration 1, and the code was regenerated.
func TestFixNeverProposesAFailedCodeAgain(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake,
		sol(code("6 * 6")), // code: fails
		sol(code("6 * 5")), // fix 1: fails
		sol(code("6 * 6")), // fix 2: the code that failed in iteration 1
		sol(code("6 * 7")), // asked again: right
	)
	fake.On("diagnosis", diagnosis(nil, failure("test_answer", messages.ErrorLogic, "assert 36 == 42", "")))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	requireSuccess(t, res)
	if n := countStage(res, messages.StageRunTests); n != 3 {
		t.Errorf("%d test runs, want 3 (6*6, 6*5, 6*7: the failed code never again); stages %v", n, stageNames(res))
	}
	if countStage(res, messages.StageCode) != 1 {
		t.Errorf("the code was regenerated: stages %v", stageNames(res))
	}
	var asks []fakellm.Request
	for _, r := range fake.Requests() {
		if r.SchemaName == "solution" {
			asks = append(asks, r)
		}
	}
	if len(asks) != 4 {
		t.Fatalf("%d solution calls, want 4 (code, two fixes, the fix asked again)", len(asks))
	}
	last := asks[3].Messages[len(asks[3].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "already tested with these tests and failed") {
		t.Errorf("the fix was asked again with %q: want it to say the code already failed", last.Content)
	}
	if !strings.Contains(res.Solution.Code, "6 * 7") {
		t.Errorf("final code %q, want the different fix", res.Solution.Code)
	}
}
