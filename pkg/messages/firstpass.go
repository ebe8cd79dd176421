package messages

import "fmt"

// FirstPass is how the pipeline writes its first solution
// (options.first_pass).
type FirstPass string

const (
	// FirstPassOneRound (the default): one model round. The code call
	// writes the plan as a field of its reply (CodeInput.PlanInline) while
	// the tests are written from the task alone, at the same time: a first
	// pass costs one model latency.
	FirstPassOneRound FirstPass = "one_round"
	// FirstPassPlanFirst: the plan is a call of its own, and the code and
	// the tests are written from it concurrently: two model latencies, and
	// code and tests agree on the names and signatures the plan gives.
	FirstPassPlanFirst FirstPass = "plan_first"
)

// PlansFirst reports whether a normalised job plans before it writes code.
// An empty value is plan_first: a spec normalised before the option
// existed (a stored state, a recorded event log) keeps the order it ran in.
func (o Options) PlansFirst() bool { return o.FirstPass != FirstPassOneRound }

// validateFirstPass checks options.first_pass: one of its values, and only
// for the jobs that write a first pass from a plan (the pipeline with tests
// and a single solution). The code runner, the agent backend and
// candidates plan first by their nature, so the option is refused there
// rather than ignored.
func (s *JobSpec) validateFirstPass() error {
	o := &s.Options
	switch o.FirstPass {
	case "":
		return nil
	case FirstPassOneRound, FirstPassPlanFirst:
	default:
		return &FieldError{"options.first_pass", fmt.Sprintf("unsupported value %q (want one_round or plan_first)", o.FirstPass)}
	}
	switch {
	case o.Backend == BackendAgent:
		return &FieldError{"options.first_pass", "does not apply to options.backend: agent (the agent plans in its own turns)"}
	case o.ValidatesByRun():
		return &FieldError{"options.first_pass", "does not apply to options.validate: run (the code runner plans first)"}
	case o.FirstPass == FirstPassOneRound && o.Candidates > 1:
		return &FieldError{"options.first_pass", "one_round cannot be combined with options.candidates > 1 (the candidates are written from one shared plan)"}
	}
	return nil
}

// normalizeFirstPass makes one_round the default of the jobs it applies to
// (validateFirstPass), and plan_first that of a pipeline job with several
// candidates; other jobs keep it empty.
func (s *JobSpec) normalizeFirstPass() {
	o := &s.Options
	if o.FirstPass != "" || s.Mode != "" || o.Backend != BackendPipeline || o.ValidatesByRun() {
		return
	}
	o.FirstPass = FirstPassOneRound
	if o.Candidates > 1 {
		o.FirstPass = FirstPassPlanFirst
	}
}
