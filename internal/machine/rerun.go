package machine

import (
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Rerun makes a submission a rerun: a run of a finished job's generated
// script on new data (submit run, submit task run), a small job of one
// StageRun, in PhaseRunning, that
// finishes with the typed outputs. The coordinator fills it from the
// finished job; the submission's Spec is that job's (its outputs, timeout
// and resources) and its Samples are the run's files: the job's samples,
// or new ones under the same names, plus File and Dir inputs.
type Rerun struct {
	FromJob  string            `json:"from_job"`
	Solution messages.Solution `json:"solution"`
	// Image and the package sets are the environment the script passed its
	// tests in; a worker without it builds it again from the packages.
	Image          string   `json:"image,omitempty"`
	Packages       []string `json:"packages,omitempty"`
	SystemPackages []string `json:"system_packages,omitempty"`
	// Args are the script's options, --name value (checked values of
	// scalar inputs, and /var/inputs paths of File and Dir inputs).
	Args map[string]string `json:"args,omitempty"`
}

// rerunKind is a submission with a Rerun.
func rerunKind() Kind {
	return Kind{
		Name:      "rerun",
		Is:        func(sub *Submission) bool { return sub.Rerun != nil },
		Start:     (*Stepper).startRerun,
		Results:   []Row{On(messages.StageRun, (*Stepper).rerunFinished)},
		Phases:    Phases{PhaseRunning: {PhaseNew}},
		succeeded: "the script ran",
	}
}

// startRerun dispatches the rerun.
func (m *Stepper) startRerun(sub *Submission) {
	s, r := m.s, sub.Rerun
	if strings.TrimSpace(r.Solution.Code) == "" {
		m.Finish(messages.StatusFailed, fmt.Sprintf("job %s has no script to run", r.FromJob))
		return
	}
	sol := r.Solution
	s.Solution = &sol
	s.Packages = normPackages(r.Packages)
	s.BuiltPackages = append([]string(nil), r.Packages...)
	s.SystemPackages = append([]string(nil), r.SystemPackages...)
	s.Image = r.Image
	m.Enter(PhaseRunning)
	m.Note(fmt.Sprintf("a run of job %s's script on new data", r.FromJob))
	m.Dispatch(messages.StageRun, messages.AcceptanceInput{
		Image: s.Image, Env: messages.BuildInput{Packages: s.BuiltPackages, SystemPackages: s.SystemPackages, Name: s.Spec.Name},
		Code: sol.Code, Samples: s.Samples, Args: r.Args, Outputs: s.Spec.Outputs,
		Timeout: s.Spec.Options.Timeout, Resources: s.Spec.Options.Resources,
	})
}

// rerunFinished finishes the rerun: succeeded when the script exited 0 and every
// declared output parses to its type; failed, with the problems, otherwise.
func (m *Stepper) rerunFinished(_ Pending, out messages.AcceptanceOutput) {
	if !m.keepRun(out) { // pipeline.go
		m.Finish(messages.StatusFailed, "the script failed on the new data: "+strings.Join(m.s.Acceptance.Problems, "; "))
	}
}
