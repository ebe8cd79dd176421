package machine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// allPhases is every phase phases.go declares.
var allPhases = []Phase{PhaseNew, PhaseProfiling, PhasePlanning, PhaseGenerating, PhasePackages, PhaseBuilding,
	PhaseTesting, PhaseDiagnosing, PhaseRepairing, PhaseAccepting, PhaseAgent, PhaseCodeMode, PhaseRunning, PhaseDone}

// allowedChanges is every built-in kind's transition table, written out:
// a change to a kind's Phases must be made here too, on purpose. ("" is
// PhaseNew: the job was just submitted.) Every row is taken by some job of
// the package's tests or of the scenario runs, and a change a kind makes
// without a row ends its job errored, so these are exactly the changes the
// kinds make.
var allowedChanges = map[string][]string{
	"pipeline": {
		" > profiling", " > planning", "profiling > planning", "planning > generating",
		"testing > generating", "accepting > generating",
		"generating > packages", "building > packages", "repairing > packages",
		"generating > building", "packages > building", "repairing > building",
		"generating > testing", "packages > testing", "building > testing", "repairing > testing",
		"generating > diagnosing", "testing > diagnosing",
		"diagnosing > repairing", "accepting > repairing",
		"generating > accepting", "testing > accepting",
	},
	"code runner": {
		" > profiling", " > planning", "profiling > planning", "planning > generating", "accepting > generating",
		"generating > packages", "building > packages", "repairing > packages",
		"generating > building", "packages > building", "repairing > building",
		"generating > accepting", "packages > accepting", "building > accepting", "repairing > accepting",
		"accepting > repairing",
	},
	"agent": {
		" > profiling", " > agent", "profiling > agent", "testing > agent", "accepting > agent",
		"agent > building", "building > packages", "building > testing", "packages > testing",
		"agent > accepting", "testing > accepting",
	},
	"codemode": {" > codemode"},
	"rerun":    {" > running"},
}

// TestEnterChecksEveryKindsTransitions enumerates, for every built-in kind,
// every change between two phases: the ones in its table move the job; any
// other ends the job errored with the change named (never a panic), staying
// in a phase is no change, and a finished job stays finished.
func TestEnterChecksEveryKindsTransitions(t *testing.T) {
	t.Parallel()
	kinds := Default().kinds
	if len(kinds) != len(allowedChanges) {
		t.Fatalf("%d built-in kinds, %d written out here", len(kinds), len(allowedChanges))
	}
	for i := range kinds {
		k := &kinds[i]
		want, ok := allowedChanges[k.Name]
		if !ok {
			t.Fatalf("kind %s is not written out here", k.Name)
		}
		for _, from := range allPhases {
			for _, to := range allPhases {
				enterOnce(t, k, from, to, slices.Contains(want, string(from)+" > "+string(to)))
			}
		}
		if got := len(changesOf(k.Phases)); got != len(want) {
			t.Errorf("kind %s: Phases has %d changes, %d written out here", k.Name, got, len(want))
		}
	}
}

func enterOnce(t *testing.T, k *Kind, from, to Phase, allowed bool) {
	t.Helper()
	s := State{Job: Job{JobID: "j", Phase: from, Pending: map[int]Pending{1: {Stage: messages.StagePlan}}}}
	m := &Stepper{s: &s, kind: k}
	m.Enter(to)
	switch {
	case from == PhaseDone:
		if s.Phase != PhaseDone || len(m.cmds) != 0 {
			t.Errorf("%s: a finished job entered %q", k.Name, to)
		}
	case from == to || allowed:
		if s.Phase != to || s.Done() && to != PhaseDone || len(m.cmds) != 0 {
			t.Errorf("%s: %q -> %q: phase %q, status %q, %d commands", k.Name, from, to, s.Phase, s.Status, len(m.cmds))
		}
	default:
		reason := fmt.Sprintf("internal: the %s kind does not allow the phase change %q -> %q", k.Name, from, to)
		if !s.Done() || s.Status != messages.StatusErrored || s.Error != reason || len(s.Pending) != 0 {
			t.Errorf("%s: %q -> %q: phase %q, status %q, error %q", k.Name, from, to, s.Phase, s.Status, s.Error)
		}
	}
}

// changesOf lists a table's changes as "from > to".
func changesOf(p Phases) []string {
	var out []string
	for to, froms := range p {
		for _, from := range froms {
			out = append(out, string(from)+" > "+string(to))
		}
	}
	slices.Sort(out)
	return out
}

// Every phase a kind's table names is declared in phases.go.
func TestKindsUseDeclaredPhases(t *testing.T) {
	t.Parallel()
	for _, k := range Default().kinds {
		for _, c := range changesOf(k.Phases) {
			from, to, _ := strings.Cut(c, " > ")
			if !slices.Contains(allPhases, Phase(from)) || !slices.Contains(allPhases, Phase(to)) {
				t.Errorf("kind %s: %s names a phase phases.go does not declare", k.Name, c)
			}
		}
	}
}
