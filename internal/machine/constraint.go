package machine

import (
	"fmt"

	"github.com/autocoder/autocoder/pkg/messages"
)

// constrain sends the constraints the profile's parser could not read to
// the constraint stage, once per job. It runs alongside planning (the plan
// does not need the checks); code and tests wait for it, as they use the
// data context it renders again with the checks.
func (m *Stepper) constrain(out messages.ProfileOutput) {
	if len(out.Unparsed) == 0 {
		return
	}
	if len(out.Render) == 0 {
		m.Note(fmt.Sprintf("%d constraint(s) the parser could not read stay in the prompt as text (the profile gave nothing to render checks into)", len(out.Unparsed)))
		return
	}
	m.Dispatch(messages.StageConstraint, messages.ConstraintInput{Constraints: out.Unparsed, Columns: out.Columns, Render: out.Render})
}

// constrained folds the checks the model read into the data context and
// the generated schemas, then starts generation if the plan is in.
func (m *Stepper) constrained(_ Pending, out messages.ConstraintOutput) {
	s := m.s
	if out.DataContext != "" {
		s.DataContext = out.DataContext
	}
	if out.GeneratedSchemas != nil {
		s.GeneratedSchemas = out.GeneratedSchemas
	}
	for _, c := range out.Checks {
		m.Note(fmt.Sprintf("constraint %q read by the model as the check %s", c.Constraint, c.Check))
	}
	for _, u := range out.Unapplied {
		m.Note("constraint kept as prompt text: " + u)
	}
	if s.Phase == PhasePlanning && s.Plan != nil {
		m.generate()
	}
}

// constraintFailed: the checks are advisory, so a failed constraint stage
// leaves the constraints in the prompt as text.
func (m *Stepper) constraintFailed(_ Pending, r *messages.StageResult) {
	m.Note("the constraint stage failed (" + firstLine(r.Error) + "): the constraints stay in the prompt as text")
	if m.s.Phase == PhasePlanning && m.s.Plan != nil {
		m.generate()
	}
}
