package messages

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
	// Score is Killed / (Killed + Survived), in [0, 1]; 1 when no mutant
	// was judged (see Judged).
	Score float64 `json:"score"`
	// ByOperator counts the mutants per kind of fault: arithmetic,
	// comparison, boundary, boolean, constant, return.
	ByOperator map[string]OperatorCounts `json:"by_operator,omitempty"`
	// Survivors are a few surviving mutants, the ones with a witness first.
	Survivors []SurvivingMutant `json:"survivors,omitempty"`
	Seed      int64             `json:"seed"`
	// Error says why the tests' strength could not be measured (the tests
	// do not pass on solution.py, solution.py does not parse, the run
	// crashed); the counts are then zero.
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Judged is how many mutants the score is over: killed or survived.
func (t TestStrength) Judged() int { return t.Killed + t.Survived }

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
	Task     TaskSpec     `json:"task"`
	Plan     Plan         `json:"plan"`
	Code     string       `json:"code"`
	Tests    string       `json:"tests"`
	Strength TestStrength `json:"strength"`
	Round    int          `json:"round"` // 1 for the first strengthening
}
