package machine

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Kind is one kind of job: which submissions are of it, how such a job
// starts, what each of its stages' results does, and the phase changes it
// may make. A job's kind is chosen once, from its submission (Is), and
// every later input is stepped through that kind's own table only.
//
// The built-in kinds (Builtin) are the pipeline, the code runner, the
// agent backend, code mode and the rerun, each in its own file. A kind may
// also be defined outside the package (a test's): it needs Is, Start, its
// rows (On) and its phases, and acts on its job through the Stepper.
type Kind struct {
	Name string
	// Is reports whether a submission is of this kind. The kinds of a
	// Machine are asked in order; the first that says yes is the job's.
	// It may read only what the state keeps of the submission (its Spec
	// and Samples, and whether it is a rerun; see submissionOf), so every
	// later step finds the same kind.
	Is func(sub *Submission) bool
	// Start begins the job: it enters the kind's first phase and
	// dispatches its first stage, or finishes the job.
	Start func(m *Stepper, sub *Submission)
	// Results is what a successful result of each stage the kind
	// dispatches does, one row per stage (On). A failed result fails the
	// job unless the row says otherwise.
	Results []Row
	// Phases are the phase changes the kind may make (Enter).
	Phases Phases

	// loop is what the steps the pipeline shares with other kinds
	// (building, package validation and replacement, the repair round)
	// ask of the job's kind; unset for kinds that share none of them.
	loop loop
	// succeeded is the job_finished event's message on success.
	succeeded string
	// results is Results by stage (New).
	results map[messages.Stage]Row
}

// loop is what differs between the kinds that share the pipeline's steps.
type loop struct {
	// generate writes the code (and the tests) once the plan is in.
	generate func(m *Stepper)
	// advance moves the job towards its next check whenever code, tests,
	// packages or an image arrive: level-triggered, it dispatches what is
	// missing and starts the check when nothing is.
	advance func(m *Stepper)
	// reflect: a fix is a reflection turn on a failed run of the script,
	// without tests (messages.FixInput.Reflect).
	reflect bool
}

// Row is one row of a kind's result table: the stage, what its successful
// result does and, for an advisory stage, what its failure does instead
// of failing the job.
type Row struct {
	stage  messages.Stage
	result func(m *Stepper, p Pending, r *messages.StageResult)
	failed func(m *Stepper, p Pending, r *messages.StageResult)
}

// On is the row of stage: its output is decoded once into T (a malformed
// output errors the job) and handed to h with the pending entry it
// answers.
func On[T any](stage messages.Stage, h func(m *Stepper, p Pending, out T)) Row {
	return Row{stage: stage, result: func(m *Stepper, p Pending, r *messages.StageResult) {
		out, err := decode[T](r)
		if err != nil {
			m.Finish(messages.StatusErrored, err.Error())
			return
		}
		h(m, p, out)
	}}
}

// advisory makes the stage advisory: a failed result goes to failed,
// which may carry on without it, instead of failing the job.
func (r Row) advisory(failed func(m *Stepper, p Pending, r *messages.StageResult)) Row {
	r.failed = failed
	return r
}

// decode reads a stage's output as a T.
func decode[T any](r *messages.StageResult) (T, error) {
	var out T
	if err := json.Unmarshal(r.Output, &out); err != nil {
		return out, fmt.Errorf("stage %s returned malformed output: %w", r.Stage, err)
	}
	return out, nil
}

// Builtin returns the built-in kinds in the order they are asked: a rerun,
// then code mode, the agent backend, the code runner, and the pipeline,
// which takes every other submission.
func Builtin() []Kind {
	return []Kind{rerunKind(), codeModeKind(), agentKind(), codeRunnerKind(), pipelineKind()}
}

// Machine steps jobs of a set of kinds.
type Machine struct {
	kinds []Kind
}

// New returns a Machine for the kinds, asked in the order given. Each kind
// needs a unique name, Is, Start, one row per stage and a transition table
// whose phases are real (PhaseDone is Finish's, and never a row).
func New(kinds ...Kind) (*Machine, error) {
	if len(kinds) == 0 {
		return nil, errors.New("machine: no job kinds")
	}
	mc := &Machine{}
	names := map[string]bool{}
	for _, k := range kinds {
		if err := k.compile(); err != nil {
			return nil, err
		}
		if names[k.Name] {
			return nil, fmt.Errorf("machine: two kinds are named %q", k.Name)
		}
		names[k.Name] = true
		mc.kinds = append(mc.kinds, k)
	}
	return mc, nil
}

// compile checks the kind and indexes its rows.
func (k *Kind) compile() error {
	switch {
	case k.Name == "":
		return errors.New("machine: a kind has no name")
	case k.Is == nil || k.Start == nil:
		return fmt.Errorf("machine: kind %s needs Is and Start", k.Name)
	}
	if err := k.Phases.check(); err != nil {
		return fmt.Errorf("machine: kind %s: %w", k.Name, err)
	}
	k.results = make(map[messages.Stage]Row, len(k.Results))
	for _, r := range k.Results {
		if r.result == nil {
			return fmt.Errorf("machine: kind %s has a row without a handler (use On)", k.Name)
		}
		if _, dup := k.results[r.stage]; dup {
			return fmt.Errorf("machine: kind %s has two rows for stage %s", k.Name, r.stage)
		}
		k.results[r.stage] = r
	}
	return nil
}

// builtin is the Machine of the built-in kinds, which Step uses.
var builtin = mustNew(Builtin()...)

func mustNew(kinds ...Kind) *Machine {
	mc, err := New(kinds...)
	if err != nil {
		panic(err) // the built-in kinds are checked by every test of the package
	}
	return mc
}

// Default returns the Machine of the built-in kinds.
func Default() *Machine { return builtin }

// Step is Default().Step.
func Step(prev State, in Input) (State, []Command) { return builtin.Step(prev, in) }

// kindOf is the kind of a job: of its submission, or for a job under way,
// of what its state keeps of the submission. Nil when no kind takes it.
func (mc *Machine) kindOf(sub *Submission) *Kind {
	for i := range mc.kinds {
		if mc.kinds[i].Is(sub) {
			return &mc.kinds[i]
		}
	}
	return nil
}

// submissionOf is what a job's state keeps of its submission: enough for
// Kind.Is. A rerun is known by its phase: it enters PhaseRunning at once
// and leaves it only to finish (no other kind's Phases has it), and a
// finished job takes no more input.
func submissionOf(s *State) *Submission {
	sub := &Submission{JobID: s.JobID, Spec: s.Spec, Samples: s.Samples}
	if s.Phase == PhaseRunning {
		sub.Rerun = &Rerun{}
	}
	return sub
}
