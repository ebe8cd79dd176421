package machine

import (
	"encoding/json"
	"fmt"

	"github.com/autocoder/autocoder/pkg/messages"
)

// results is what a successful result of each stage does, read as a table:
// the stage's output is decoded once, by on, into the type the handler
// takes (a malformed output errors the job), then handed over with the
// pending entry it answers.
var results = map[messages.Stage]resultHandler{
	messages.StageProfile:            on((*stepper).profiled),
	messages.StagePlan:               on((*stepper).planned),
	messages.StageConstraint:         on((*stepper).constrained), // constraint.go
	messages.StageCode:               on((*stepper).coded),
	messages.StageTests:              on((*stepper).testsWritten),
	messages.StagePackages:           on((*stepper).packaged),
	messages.StagePackageReplacement: on((*stepper).replaced), // replace.go
	messages.StageBuild:              on((*stepper).built),
	messages.StageRunTests:           on((*stepper).tested),
	messages.StageDiagnose:           on((*stepper).route),    // repair.go
	messages.StageFix:                on((*stepper).fixed),    // repair.go
	messages.StageVerify:             on((*stepper).verified), // repair.go
	messages.StagePatchTests:         on((*stepper).patched),  // repair.go
	messages.StageAcceptance:         on((*stepper).accepted),
	messages.StageMutate:             on((*stepper).mutated),                // strength.go
	messages.StageStrengthenTests:    on((*stepper).strengthened),           // strength.go
	messages.StageRun:                on((*stepper).rerunFinished),          // rerun.go
	messages.StageAgentTurn:          on((*stepper).agentTurned),            // agent.go
	messages.StageAgentTool:          on((*stepper).agentToolDone),          // agent.go
	messages.StageCodeModeTools:      on((*stepper).codeModeToolsDescribed), // codemode.go
	messages.StageCodeModeTurn:       on((*stepper).codeModeReplied),
	messages.StageCodeModeExec:       on((*stepper).codeModeRan),
}

// resultHandler acts on a successful stage result.
type resultHandler func(m *stepper, p Pending, r *messages.StageResult)

// on makes a resultHandler of a handler of the decoded output T.
func on[T any](h func(m *stepper, p Pending, out T)) resultHandler {
	return func(m *stepper, p Pending, r *messages.StageResult) {
		out, err := decode[T](r)
		if err != nil {
			m.finish(messages.StatusErrored, err.Error())
			return
		}
		h(m, p, out)
	}
}

// decode reads a stage's output as a T.
func decode[T any](r *messages.StageResult) (T, error) {
	var out T
	if err := json.Unmarshal(r.Output, &out); err != nil {
		return out, fmt.Errorf("stage %s returned malformed output: %w", r.Stage, err)
	}
	return out, nil
}

// result routes a successful stage result through the table.
func (m *stepper) result(p Pending, r *messages.StageResult) {
	if h, ok := results[r.Stage]; ok {
		h(m, p, r)
	}
}

func (m *stepper) profiled(_ Pending, out messages.ProfileOutput) {
	m.s.DataContext = out.DataContext
	m.s.GeneratedSchemas = out.GeneratedSchemas
	if m.isAgent() {
		m.agentStart() // agent.go: the model reads the data context itself
		return
	}
	m.constrain(out) // constraint.go: alongside planning
	m.plan()
}

func (m *stepper) planned(_ Pending, out messages.Plan) {
	m.s.Plan = &out
	if m.busy(0, messages.StageConstraint) {
		return // generation starts when the checks arrive (constraint.go)
	}
	m.generate()
}

// coded takes a solution of the job's line or of a candidate's.
func (m *stepper) coded(p Pending, out messages.Solution) {
	if p.Candidate > 0 {
		if c := m.candidate(p.Candidate); c != nil {
			c.Solution = &out
		}
	} else {
		m.s.Solution = &out
	}
	m.advance()
}

func (m *stepper) testsWritten(_ Pending, out messages.Tests) {
	m.s.Tests = &out
	m.advance()
}

// packaged adds the distributions the model named for unmapped imports.
func (m *stepper) packaged(p Pending, out messages.Packages) {
	if p.Candidate > 0 {
		if c := m.candidate(p.Candidate); c != nil {
			c.Packages = normPackages(append(c.Packages, validPackages(out.Packages)...))
		}
	} else {
		m.s.Packages = normPackages(append(m.s.Packages, validPackages(out.Packages)...))
	}
	m.advance()
}

// tested takes a test run of the job's line or of a candidate's.
func (m *stepper) tested(p Pending, out messages.TestReport) {
	if m.s.Agent != nil {
		m.agentTested(p, out) // agent.go
		return
	}
	if p.Candidate > 0 {
		m.candidateReport(p.Candidate, out)
		return
	}
	m.report(out)
}

// orphanResult handles a losing candidate's stage: counted and listed
// (record), nothing more, except that an image is worth keeping.
func (m *stepper) orphanResult(p Pending, r *messages.StageResult) {
	if r.Stage != messages.StageBuild || r.Error != "" || p.Env == "" {
		return
	}
	if out, err := decode[messages.BuildOutput](r); err == nil && out.Image != "" {
		m.keepImage(p.Env, out.Image)
	}
}
