package sandboxstages_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The mutate stage measures real tests in the process sandbox, within the
// worker's timeout ceiling.
func TestMutateStage(t *testing.T) {
	t.Parallel()
	rec := &recordingBackend{Backend: newProcessBackend(t)}
	h := newStages(t, sandboxstages.Config{Backend: rec, Samples: &fetcher{}, Ceilings: sandboxstages.Ceilings{Timeout: 40 * time.Second}})
	in := messages.MutateInput{
		Image: "built-by-another-worker", Env: messages.BuildInput{Packages: []string{}, SystemPackages: []string{}},
		Code:  "def at_most(xs, n):\n    return [x for x in xs if x <= n]\n",
		Tests: "from solution import at_most\n\n\ndef test_some():\n    assert at_most([1, 5, 9], 4) == [1]\n",
		Seed:  1, MaxMutants: 10, Budget: messages.Duration(10 * time.Minute),
	}
	out, err := h.Handle(ctxT(t), command(t, messages.StageMutate, in))
	if err != nil {
		t.Fatal(err)
	}
	var ts messages.TestStrength
	if err := json.Unmarshal(out.raw, &ts); err != nil {
		t.Fatal(err)
	}
	if ts.Error != "" || ts.Mutants == 0 || ts.Survived == 0 || ts.Score >= 1 {
		t.Errorf("strength %+v: want the boundary mutant to survive the weak test", ts)
	}
	rec.mu.Lock()
	spec := rec.runs[len(rec.runs)-1]
	rec.mu.Unlock()
	if spec.Timeout > 40*time.Second+2*time.Minute || !strings.Contains(strings.Join(spec.Argv, " "), "--budget 40") {
		t.Errorf("the budget is not capped at the ceiling: timeout %s, argv %q", spec.Timeout, spec.Argv)
	}
}
