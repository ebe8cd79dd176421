package messages

import (
	"fmt"
	"strings"
	"time"
)

// TestStrength is how strong a job's tests are, measured by mutation: small
// faults (mutants) are made in solution.py and the tests run against each.
// A mutant the tests fail is killed; one they pass survived; a survivor that
// returns the same as solution.py on every call the tests made and on small
// perturbations of those calls is equivalent (likely the same function, so
// no test can be asked to kill it). docs/test-strength.md says more.
type TestStrength struct {
	// Points is how many mutants solution.py has in all; Mutants how many
	// were made (a seeded sample of MaxMutants when Points is larger).
	Points  int `json:"points"`
	Mutants int `json:"mutants"`
	// Killed includes TimedOut: a mutant that hangs the tests is caught.
	Killed     int `json:"killed"`
	Survived   int `json:"survived"`
	Equivalent int `json:"equivalent"`
	TimedOut   int `json:"timed_out,omitempty"`
	// NotRun counts mutants left when the time budget ran out (Partial).
	NotRun  int  `json:"not_run,omitempty"`
	Partial bool `json:"partial,omitempty"`
	// Score is Killed / (Killed + Survived), in [0, 1]. A measurement that
	// judged no mutant (see Judged) has no score: Error says so (NotJudged)
	// and Score is 0.
	Score float64 `json:"score"`
	// ByOperator counts the mutants per kind of fault: arithmetic,
	// comparison, boundary, boolean, constant, return.
	ByOperator map[string]OperatorCounts `json:"by_operator,omitempty"`
	// Survivors are a few surviving mutants, the ones with a witness first.
	Survivors []SurvivingMutant `json:"survivors,omitempty"`
	Seed      int64             `json:"seed"`
	// Error says why the tests' strength could not be measured (the tests
	// do not pass on solution.py, solution.py does not parse, the run
	// crashed; or NotJudged: no mutant was judged); Score is then 0 and
	// means nothing.
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Judged is how many mutants the score is over: killed or survived.
func (t TestStrength) Judged() int { return t.Killed + t.Survived }

// NotJudged begins the Error of a measurement that judged no mutant: there
// was none, every one was equivalent, or the time budget ran out first.
const NotJudged = "not judged"

// Scored reports whether t has a score: no Error, and a mutant judged.
func (t TestStrength) Scored() bool { return t.Error == "" && t.Judged() > 0 }

// OperatorCounts are the mutants of one kind of fault.
type OperatorCounts struct {
	Mutants    int `json:"mutants"`
	Killed     int `json:"killed"`
	Survived   int `json:"survived"`
	Equivalent int `json:"equivalent"`
}

// SurvivingMutant is a fault the tests did not catch.
type SurvivingMutant struct {
	ID          int    `json:"id"`
	Operator    string `json:"operator"`
	Line        int    `json:"line"`
	Description string `json:"description"` // e.g. "< -> <="
	Diff        string `json:"diff"`        // unified diff of solution.py
	// Witness is a call on which solution.py and the mutant differ, with
	// what each gave (Original, Mutant); empty when none was found. Near
	// marks a witness that is a perturbation of a call the tests made
	// rather than one of their own: the tests do not reach that input.
	Witness  string `json:"witness,omitempty"`
	Original string `json:"original,omitempty"`
	Mutant   string `json:"mutant,omitempty"`
	Near     bool   `json:"near,omitempty"`
}

// StrengthenTestsInput is the input of the tests call that strengthens
// tests which pass but let mutants survive: it shows the model the
// survivors (with their witnesses) and asks for the whole test file again,
// with tests that kill them. The reply is the `tests` structured reply.
type StrengthenTestsInput struct {
	Task        TaskSpec     `json:"task"`
	DataContext string       `json:"data_context,omitempty"`
	Plan        Plan         `json:"plan"`
	Code        string       `json:"code"`
	Tests       string       `json:"tests"`
	Strength    TestStrength `json:"strength"`
	Round       int          `json:"round"` // 1 for the first strengthening
}

// Stages of test strength.
const (
	// StageMutate measures the tests' strength (sandbox pool): mutants of
	// solution.py run against the passing tests.
	StageMutate Stage = "mutate"
	// StageStrengthenTests asks the model for tests that kill the surviving
	// mutants (llm pool; the `tests` structured reply).
	StageStrengthenTests Stage = "strengthen_tests"
)

// Mutation is options.mutation: whether a job measures its tests'
// strength, and whether it strengthens weak tests.
type Mutation string

const (
	MutationOn      Mutation = "on"      // measure, and strengthen below min_test_strength (default)
	MutationMeasure Mutation = "measure" // measure only: no model call
	MutationOff     Mutation = "off"     // neither
)

// Defaults and bounds of the mutation options.
const (
	DefaultMinTestStrength  = 0.8
	DefaultStrengthenRounds = 2
	MaxStrengthenRounds     = 5
	DefaultMaxMutants       = 40
	MaxMaxMutants           = 200
	DefaultMutationBudget   = 90 * time.Second
	MaxMutationBudget       = 15 * time.Minute
)

// validateMutation checks the mutation options.
func (o *Options) validateMutation() error {
	switch o.Mutation {
	case "", MutationOn, MutationMeasure, MutationOff:
	default:
		return &FieldError{"options.mutation", fmt.Sprintf("unsupported value %q (want on, measure or off)", o.Mutation)}
	}
	switch {
	case o.MinTestStrength < 0 || o.MinTestStrength > 1:
		return &FieldError{"options.min_test_strength", "must be above 0 and at most 1 (0 reads as unset, the default 0.8; to measure without a threshold, set mutation: measure)"}
	case o.StrengthenRounds < 0 || o.StrengthenRounds > MaxStrengthenRounds:
		return &FieldError{"options.strengthen_rounds", fmt.Sprintf("must be between 1 and %d", MaxStrengthenRounds)}
	case o.MaxMutants < 0 || o.MaxMutants > MaxMaxMutants:
		return &FieldError{"options.max_mutants", fmt.Sprintf("must be between 1 and %d", MaxMaxMutants)}
	case o.MutationBudget < 0 || o.MutationBudget.Std() > MaxMutationBudget:
		return &FieldError{"options.mutation_budget", "must be at most " + MaxMutationBudget.String()}
	}
	return nil
}

// mutationTuning are the mutation options besides options.mutation.
func (o *Options) mutationTuning() []optionSet {
	return []optionSet{
		{"options.min_test_strength", o.MinTestStrength != 0},
		{"options.strengthen_rounds", o.StrengthenRounds != 0},
		{"options.max_mutants", o.MaxMutants != 0},
		{"options.mutation_budget", o.MutationBudget != 0},
	}
}

// noTestsToMutate names why a pipeline job has no generated tests to
// measure by mutation, "" when it has them.
func (o *Options) noTestsToMutate() string {
	switch {
	case o.SkipTests:
		return "options.skip_tests"
	case o.ValidatesByRun():
		return "options.validate: run"
	case o.Backend == BackendAgent:
		return "options.backend: agent"
	}
	return ""
}

// validateMutationApplies refuses the mutation options a job would
// ignore, as validateFirstPass does first_pass: every one in a job without
// generated tests (mutation: off says what happens there and is accepted;
// Normalize writes it), the tuning with mutation: off, and the
// strengthening's (min_test_strength, strengthen_rounds) with mutation:
// measure, which makes no model call.
func (s *JobSpec) validateMutationApplies() error {
	o := &s.Options
	if why := o.noTestsToMutate(); why != "" {
		opts := append([]optionSet{{"options.mutation", o.Mutation != "" && o.Mutation != MutationOff}}, o.mutationTuning()...)
		if f := firstSet(opts); f != "" {
			return &FieldError{f, "does not apply with " + why + " (there are no generated tests to measure by mutation)"}
		}
		return nil
	}
	switch o.Mutation {
	case MutationOff:
		if f := firstSet(o.mutationTuning()); f != "" {
			return &FieldError{f, "does not apply with options.mutation: off (nothing is measured)"}
		}
	case MutationMeasure:
		if f := firstSet(o.mutationTuning()[:2]); f != "" {
			return &FieldError{f, "does not apply with options.mutation: measure (the tests are measured, never strengthened; mutation: on strengthens them)"}
		}
	}
	return nil
}

// normalizeMutation fills in the mutation defaults that apply. A job
// whose tests are not generated (skip_tests, validate: run, the agent
// backend) has nothing to mutate against: mutation is off there. Only the
// settings the mode uses are filled in (Validate refuses the others):
// none with mutation: off, no threshold or rounds with mutation: measure.
func (s *JobSpec) normalizeMutation() {
	o := &s.Options
	if o.noTestsToMutate() != "" {
		o.Mutation = MutationOff
		return
	}
	if o.Mutation == "" {
		o.Mutation = MutationOn
	}
	if o.Mutation == MutationOff {
		return
	}
	if o.Mutation == MutationOn {
		if o.MinTestStrength == 0 {
			o.MinTestStrength = DefaultMinTestStrength
		}
		if o.StrengthenRounds == 0 {
			o.StrengthenRounds = DefaultStrengthenRounds
		}
	}
	if o.MaxMutants == 0 {
		o.MaxMutants = DefaultMaxMutants
	}
	if o.MutationBudget == 0 {
		o.MutationBudget = Duration(DefaultMutationBudget)
	}
}

// Hermetic reports whether a measurement follows from the code and tests
// alone: not when the time budget ran out or the run timed out, which
// depends on the machine's load. Workers do not cache such measurements.
func (t TestStrength) Hermetic() bool {
	return !t.Partial && !strings.Contains(t.Error, "timed out")
}

// MutateInput is the input of StageMutate.
type MutateInput struct {
	Image     string      `json:"image"`
	Env       BuildInput  `json:"env"` // as in RunTestsInput
	Code      string      `json:"code"`
	Tests     string      `json:"tests"`
	Samples   []SampleRef `json:"samples,omitempty"`
	Resources Resources   `json:"resources"`
	// Seed picks the sample of mutants; the same seed, code and tests give
	// the same mutants.
	Seed       int64    `json:"seed"`
	MaxMutants int      `json:"max_mutants"`
	Budget     Duration `json:"budget"`
}

// StrengthReport is the result's test_strength: the last measurement
// (its fields inline), how the score changed and what strengthening cost.
type StrengthReport struct {
	TestStrength
	// Scores are every measurement's score in order: the first is the
	// generated tests', the last the final tests'.
	Scores []float64 `json:"scores"`
	// Rounds counts the model calls for stronger tests; Usage is their
	// calls and tokens (the repairs a stronger test led to are counted with
	// the repair stages).
	Rounds          int     `json:"rounds"`
	Usage           Usage   `json:"usage"`
	MinTestStrength float64 `json:"min_test_strength"`
	// Outcome says in a few words why the loop stopped.
	Outcome string `json:"outcome,omitempty"`
}

// InitialScore is the score of the first measurement (of the generated tests).
func (r StrengthReport) InitialScore() float64 {
	if len(r.Scores) == 0 {
		return r.Score
	}
	return r.Scores[0]
}
