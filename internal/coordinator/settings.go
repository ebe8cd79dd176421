package coordinator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Offered is what the fleet offers to the per-job settings (issue 22):
// the models of the operator's model table and the Python versions of
// AUTOCODER_PYTHONS, shared configuration of the coordinator and the
// workers (docs/settings.md says why). Nil lists check nothing: any name
// passes here, and a worker that lacks it fails the stage with the reason.
type Offered struct {
	Models  []string // the model table's names
	Pythons []string // "3.11", "3.12"
}

// checkOffered refuses a job naming a model or a Python version the fleet
// does not offer, naming the field and what is offered.
func (c *Coordinator) checkOffered(spec *messages.JobSpec) error {
	o := c.cfg.Offered
	if m := spec.Options.Model; m != "" && o.Models != nil && !slices.Contains(o.Models, m) {
		return &messages.FieldError{Field: "options.model", Msg: fmt.Sprintf("%q is not in the model table (models: %s)", m, strings.Join(o.Models, ", "))}
	}
	if p := spec.Options.Python; p != "" && o.Pythons != nil && !slices.Contains(o.Pythons, p) {
		return &messages.FieldError{Field: "options.python", Msg: fmt.Sprintf("Python %s is not offered by this deployment (versions: %s)", p, strings.Join(o.Pythons, ", "))}
	}
	return nil
}
