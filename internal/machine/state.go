package machine

import (
	"encoding/json"
	"time"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Phase is where a job is in the loop.
type Phase string

const (
	PhaseProfiling  Phase = "profiling"
	PhasePlanning   Phase = "planning"
	PhaseGenerating Phase = "generating" // code and tests, concurrently
	PhasePackages   Phase = "packages"   // the model maps imports the scan could not
	PhaseBuilding   Phase = "building"
	PhaseTesting    Phase = "testing"
	PhaseDiagnosing Phase = "diagnosing"
	PhaseRepairing  Phase = "repairing" // fix, test patches and rebuilds, concurrently
	PhaseAccepting  Phase = "accepting"
	PhaseRunning    Phase = "running" // a rerun's one phase: the script runs on new data (rerun.go)
	PhaseDone       Phase = "done"
)

// Pending is a dispatched stage whose result has not arrived.
type Pending struct {
	Stage        messages.Stage `json:"stage"`
	Iteration    int            `json:"iteration"`
	DispatchedAt time.Time      `json:"dispatched_at"`
	Candidate    int            `json:"candidate,omitempty"` // 1-based candidate of the candidate round; 0 for the job's own line
	Env          string         `json:"env,omitempty"`       // builds: the environment key (see envKey)
	Package      string         `json:"package,omitempty"`   // package_replacement: the name being replaced
	// Orphan marks a losing candidate's stage: its result is recorded
	// (usage, stage list) but acted on no further.
	Orphan bool `json:"orphan,omitempty"`
}

// State is everything the coordinator knows about one job. It is stored as
// JSON in the job-state KV bucket and only ever changed by Step.
type State struct {
	JobID       string               `json:"job_id"`
	Spec        messages.JobSpec     `json:"spec"` // normalised; samples are object refs
	Task        messages.TaskSpec    `json:"task"`
	Samples     []messages.SampleRef `json:"samples,omitempty"`
	Phase       Phase                `json:"phase"`
	NextSeq     int                  `json:"next_seq"`
	Pending     map[int]Pending      `json:"pending,omitempty"`
	Iteration   int                  `json:"iteration"` // test runs started
	SubmittedAt time.Time            `json:"submitted_at"`
	FinishedAt  *time.Time           `json:"finished_at,omitempty"`

	DataContext      string                     `json:"data_context,omitempty"`
	GeneratedSchemas map[string]string          `json:"generated_schemas,omitempty"`
	Plan             *messages.Plan             `json:"plan,omitempty"`
	Solution         *messages.Solution         `json:"solution,omitempty"`
	Tests            *messages.Tests            `json:"tests,omitempty"`
	Packages         []string                   `json:"packages,omitempty"`        // detected + declared + added
	SystemPackages   []string                   `json:"system_packages,omitempty"` // declared + added
	BuiltPackages    []string                   `json:"built_packages,omitempty"`  // the set Image was built for
	Image            string                     `json:"image,omitempty"`
	LastReport       *messages.TestReport       `json:"last_report,omitempty"`
	Diagnosis        *messages.Diagnosis        `json:"diagnosis,omitempty"`
	Acceptance       *messages.AcceptanceOutput `json:"acceptance,omitempty"`
	InvalidPackages  []string                   `json:"invalid_packages,omitempty"`
	// Replacements maps a package the build could not find (canonical name)
	// to the one the model named instead ("" = go without); ReplaceTries
	// counts the model's tries per originally missing package.
	Replacements map[string]string `json:"replacements,omitempty"`
	ReplaceTries map[string]int    `json:"replace_tries,omitempty"`
	// Stdlib is the sandbox interpreter's standard library, from the first
	// build that reported it (messages.BuildOutput.Stdlib): the import scan
	// leaves these modules out. Empty: pyscan's CPython 3.11 list is used
	// (StdlibNoted: the result says so, once).
	Stdlib       []string `json:"stdlib,omitempty"`
	StdlibNoted  bool     `json:"stdlib_noted,omitempty"`
	AskedImports []string `json:"asked_imports,omitempty"` // imports the model was asked to map, once each

	// Repair bookkeeping (see repair.go). Everything here is bounded, so the
	// state stays far below the KV value limit whatever the job does.
	Images        map[string]string                 `json:"images,omitempty"`      // env key -> image, every successful build
	FailedEnvs    []string                          `json:"failed_envs,omitempty"` // env keys whose build named invalid packages
	Candidates    []Candidate                       `json:"candidates,omitempty"`  // the candidate round (options.candidates > 1)
	Tracks        []Track                           `json:"tracks,omitempty"`      // failing tests of the last run, across iterations
	Seen          []Fingerprint                     `json:"seen,omitempty"`        // failing states already tested (stuck detection)
	Round         *Round                            `json:"round,omitempty"`       // the repair round in progress
	Regenerations int                               `json:"regenerations,omitempty"`
	StageUsage    map[messages.Stage]messages.Usage `json:"stage_usage,omitempty"` // exact, even when old stage records are dropped

	Stages    []messages.StageRecord `json:"stages,omitempty"`
	Usage     messages.Usage         `json:"usage"`
	CacheHits int                    `json:"cache_hits"`
	History   []messages.ChatMessage `json:"history,omitempty"`
	Notes     []string               `json:"notes,omitempty"` // why the loop did what it did

	Status messages.JobStatus `json:"status"`
	Error  string             `json:"error,omitempty"`
}

// Clone returns a deep copy, so Step never changes the state it was given.
func (s State) Clone() State {
	b, err := json.Marshal(s)
	if err != nil {
		panic("machine: state does not marshal: " + err.Error()) // only plain data: cannot happen
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		panic("machine: state does not unmarshal: " + err.Error())
	}
	return out
}

// Done reports whether the job has finished.
func (s *State) Done() bool { return s.Phase == PhaseDone }

// EventKind says what happened.
type EventKind string

const (
	EventSubmitted   EventKind = "submitted"
	EventStageResult EventKind = "stage_result"
	EventCancel      EventKind = "cancel"
)

// Event is an input of Step. Time is the coordinator's clock when the event
// was taken: Step itself never reads a clock.
type Event struct {
	Kind   EventKind             `json:"kind"`
	Time   time.Time             `json:"time"`
	Submit *Submission           `json:"submit,omitempty"`
	Result *messages.StageResult `json:"result,omitempty"`
	Reason string                `json:"reason,omitempty"` // cancel
}

// Submission starts a job.
type Submission struct {
	JobID   string               `json:"job_id"`
	Spec    messages.JobSpec     `json:"spec"` // normalised, samples as object refs
	Samples []messages.SampleRef `json:"samples,omitempty"`
	Rerun   *Rerun               `json:"run,omitempty"` // a run of a finished job's script on new data (rerun.go)
}

// Command is an output of Step: exactly one field is set.
type Command struct {
	Dispatch *messages.StageCommand `json:"dispatch,omitempty"` // send to a worker pool
	Emit     *messages.Event        `json:"emit,omitempty"`     // progress event
	Finish   *messages.Result       `json:"finish,omitempty"`   // the job is over: store its result
}

// Route is the repair a failing test got in a round.
type Route string

const (
	RouteFix        Route = "fix"        // logic: a code fix
	RoutePatch      Route = "patch"      // test_error: a patch of the test function
	RoutePackages   Route = "packages"   // environment: packages added, image rebuilt
	RouteRegenerate Route = "regenerate" // the loop was stuck: code written again from the plan
)

// Track follows one failing test across iterations, so the loop can tell a
// failure that survived its repair from a new one.
type Track struct {
	Test      string `json:"test"`      // protocol.TestID form
	Signature string `json:"signature"` // normalised error (see Signature)
	Since     int    `json:"since"`     // iteration in which this signature first appeared
	Runs      int    `json:"runs"`      // consecutive runs with this signature
	// Survived: the signature is the one the test had before the last
	// round, which applied LastRepair to it (verified if LastApplied).
	Survived    bool  `json:"survived,omitempty"`
	LastRepair  Route `json:"last_repair,omitempty"`
	LastApplied bool  `json:"last_applied,omitempty"`
	// Class and Repair are what the current round decided for it.
	Class  messages.ErrorType `json:"class,omitempty"`
	Repair Route              `json:"repair,omitempty"`
	// Applied is set when the round ends: its repair was verified as applied.
	Applied bool     `json:"applied,omitempty"`
	Flips   []string `json:"flips,omitempty"` // reclassifications, "test_error->logic"
	Fixes   int      `json:"fixes,omitempty"` // repairs tried on it, for the failure history
	Patches int      `json:"patches,omitempty"`
}

// Fingerprint identifies a failing state: code, tests, environment and
// failure signatures. The same fingerprint twice means no progress.
type Fingerprint struct {
	Iteration int    `json:"iteration"`
	Hash      string `json:"hash"`
}

// Round is one repair round: the fixes, test patches and rebuilds that one
// diagnosis (or acceptance failure) asked for, with their verification.
type Round struct {
	Iteration  int                `json:"iteration"`
	Acceptance bool               `json:"acceptance,omitempty"` // repairing an acceptance failure
	BaseCode   string             `json:"base_code"`            // before the fix, for verification
	BaseTests  string             `json:"base_tests,omitempty"` // before the patch, for verification
	Logic      []messages.Failure `json:"logic,omitempty"`      // routed to the code fix
	TestErrors []messages.Failure `json:"test_errors,omitempty"`
	// Attempts so far; attempt n is sent with escalation n-1.
	FixAttempts   int          `json:"fix_attempts,omitempty"`
	PatchAttempts int          `json:"patch_attempts,omitempty"`
	Fix           RepairStatus `json:"fix,omitempty"`   // pending, verifying, applied, assumed or unverified
	Patch         RepairStatus `json:"patch,omitempty"` // pending, applied or unverified
}

// RepairStatus is where a round's fix or test patch stands.
type RepairStatus string

// The statuses of a fix or patch in a round.
const (
	RepairPending    RepairStatus = "pending"
	RepairVerifying  RepairStatus = "verifying"  // a fix the mechanical check could not decide, at the verify stage
	RepairApplied    RepairStatus = "applied"    // verified: the check or the verify stage found the fix
	RepairAssumed    RepairStatus = "assumed"    // the code changed and nothing specific could be checked
	RepairUnverified RepairStatus = "unverified" // still missing after the last attempt
)

// Candidate is one of options.candidates independent solutions of the
// first round. Each is built and tested on its own; the first that passes
// becomes the job's solution.
type Candidate struct {
	Index    int                  `json:"index"` // 1-based
	Solution *messages.Solution   `json:"solution,omitempty"`
	Packages []string             `json:"packages,omitempty"`
	Asked    []string             `json:"asked,omitempty"` // imports the model was asked to map
	Image    string               `json:"image,omitempty"`
	Report   *messages.TestReport `json:"report,omitempty"`
	Failed   string               `json:"failed,omitempty"` // why it could not be tested
}

func (c *Candidate) done() bool { return c.Report != nil || c.Failed != "" }
