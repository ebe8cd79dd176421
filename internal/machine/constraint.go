package machine

import (
	"fmt"

	"github.com/autocoder/autocoder/pkg/messages"
)

// constrain sends the constraints the profile's parser could not read to
// the constraint stage, once per job. It runs alongside planning (the plan
// does not need the checks); code and tests wait for it, as they use the
// data context it renders again with the checks.
func (m *stepper) constrain(out messages.ProfileOutput) {
	if len(out.Unparsed) == 0 {
		return
	}
	if len(out.Render) == 0 {
		m.note(fmt.Sprintf("%d constraint(s) the parser could not read stay in the prompt as text (the profile gave nothing to render checks into)", len(out.Unparsed)))
		return
	}
	m.dispatch(messages.StageConstraint, messages.ConstraintInput{Constraints: out.Unparsed, Columns: out.Columns, Render: out.Render})
}

// constrained folds the checks the model read into the data context and
// the generated schemas, then starts generation if the plan is in.
func (m *stepper) constrained(_ Pending, out messages.ConstraintOutput) {
	s := m.s
	if out.DataContext != "" {
		s.DataContext = out.DataContext
	}
	if out.GeneratedSchemas != nil {
		s.GeneratedSchemas = out.GeneratedSchemas
	}
	for _, c := range out.Checks {
		m.note(fmt.Sprintf("constraint %q read by the model as the check %s", c.Constraint, c.Check))
	}
	for _, u := range out.Unapplied {
		m.note("constraint kept as prompt text: " + u)
	}
	if s.Phase == PhasePlanning && s.Plan != nil {
		m.generate()
	}
}
