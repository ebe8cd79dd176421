package machine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Phase is where a job is in its kind's work. Every phase of every kind
// is declared here; which phase may follow which is each kind's Phases.
type Phase string

const (
	PhaseNew        Phase = ""           // submitted: the kind's Start enters its first phase
	PhaseProfiling  Phase = "profiling"  // the samples are profiled
	PhasePlanning   Phase = "planning"   // the pipeline: the plan (and the constraint checks)
	PhaseGenerating Phase = "generating" // code and tests, concurrently
	PhasePackages   Phase = "packages"   // the model maps imports the scan could not
	PhaseBuilding   Phase = "building"
	PhaseTesting    Phase = "testing"
	PhaseDiagnosing Phase = "diagnosing"
	PhaseRepairing  Phase = "repairing" // fix, test patches and rebuilds, concurrently
	PhaseAccepting  Phase = "accepting" // the script runs on the samples
	PhaseAgent      Phase = "agent"     // the agent backend between turns and tool calls (agent.go)
	PhaseCodeMode   Phase = "codemode"  // the one phase of a code-mode job (codemode.go)
	PhaseRunning    Phase = "running"   // the one phase of a rerun: the script runs on new data (rerun.go)
	PhaseDone       Phase = "done"
)

// RepairStatus is where a repair round's fix or test patch stands (repair.go).
type RepairStatus string

const (
	RepairPending    RepairStatus = "pending"
	RepairVerifying  RepairStatus = "verifying"  // a fix the mechanical check could not decide, at the verify stage
	RepairApplied    RepairStatus = "applied"    // verified: the check or the verify stage found the fix
	RepairAssumed    RepairStatus = "assumed"    // the code changed and nothing specific could be checked
	RepairUnverified RepairStatus = "unverified" // still missing after the last attempt
)

// Phases is a kind's transition table: each phase the kind enters, with
// the phases it may be entered from (PhaseNew for the first). Two changes
// need no row: staying in a phase, and PhaseDone, which Finish enters from
// anywhere (a failure, a cancellation).
type Phases map[Phase][]Phase

// check refuses rows no job can follow: PhaseNew is left, never
// entered, and PhaseDone is Finish's, left by nothing.
func (t Phases) check() error {
	for to, froms := range t {
		switch {
		case to == PhaseNew:
			return errors.New("no phase change enters PhaseNew")
		case to == PhaseDone:
			return errors.New("PhaseDone is entered by Finish, not by a row of Phases")
		case slices.Contains(froms, PhaseDone):
			return fmt.Errorf("phase %s is entered from PhaseDone, which a job never leaves", to)
		}
	}
	return nil
}

// allows reports whether the table has the change from -> to.
func (t Phases) allows(from, to Phase) bool { return slices.Contains(t[to], from) }

// Enter moves the job to phase p, as the job's kind allows (Phases), as
// Temporal's command state machine checks each of its transitions. A change
// the kind does not allow is a bug in the kind: it ends the job errored,
// with the change named, rather than leaving it in a phase nothing
// expects. A finished job stays finished.
func (m *Stepper) Enter(p Phase) {
	s := m.s
	if s.Done() || s.Phase == p {
		return
	}
	if !m.kind.Phases.allows(s.Phase, p) {
		m.Finish(messages.StatusErrored, fmt.Sprintf("internal: the %s kind does not allow the phase change %q -> %q", m.kind.Name, s.Phase, p))
		return
	}
	s.Phase = p
}
