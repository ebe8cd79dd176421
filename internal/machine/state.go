package machine

import (
	"encoding/json"
	"time"

	clone "github.com/huandu/go-clone/generic"

	"github.com/autocoder/autocoder/pkg/messages"
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
	// StartedAt and Worker are set when a worker took the stage (its
	// StageStarted notice, started.go); until then it waits in its pool's queue.
	StartedAt *time.Time `json:"started_at,omitempty"`
	Worker    string     `json:"worker,omitempty"`
	// Input and Retries let a sandbox stage of a job with
	// options.sandbox_retries be sent again after an infrastructure
	// failure (settings.go): its input, and the retries it has had.
	Input   json.RawMessage `json:"input,omitempty"`
	Retries int             `json:"retries,omitempty"`
}

// State is everything the coordinator knows about one job. It is stored as
// JSON in the job-state KV bucket and only ever changed by Step.
//
// It is composed of parts owned by the files that use them. The parts are
// embedded without a JSON tag, in the order of the fields they replaced,
// so a state's JSON is a flat object as it always was: stored states and
// recorded event logs decode, and encode to the same bytes.
type State struct {
	Job
	Artifacts
	Environment // env.go
	Reports
	MissingPackages // replace.go
	ImportScan      // env.go
	Builds          // env.go
	CandidateRound  // candidates.go
	RepairLog       // repair.go
	Ledger          // budget.go
	Outcome
	ContextLog  // runvalidate.go
	AgentRun    // agent.go
	CodeModeRun // codemode.go
	StrengthLog // strength.go
}

// Job is the job's identity, its place in the loop and its clock.
type Job struct {
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
}

// Artifacts are what the stages wrote for the job: the data context, the
// plan, the code and the tests.
type Artifacts struct {
	DataContext      string             `json:"data_context,omitempty"`
	GeneratedSchemas map[string]string  `json:"generated_schemas,omitempty"`
	Plan             *messages.Plan     `json:"plan,omitempty"`
	Solution         *messages.Solution `json:"solution,omitempty"`
	Tests            *messages.Tests    `json:"tests,omitempty"`
}

// Reports are the last test run, diagnosis and script run.
type Reports struct {
	LastReport *messages.TestReport       `json:"last_report,omitempty"`
	Diagnosis  *messages.Diagnosis        `json:"diagnosis,omitempty"`
	Acceptance *messages.AcceptanceOutput `json:"acceptance,omitempty"`
}

// Outcome is how the job ended (Status is running until then).
type Outcome struct {
	Status    messages.JobStatus     `json:"status"`
	Error     string                 `json:"error,omitempty"`
	Cancelled *messages.Cancellation `json:"cancelled,omitempty"` // who cancelled the job, when, why
}

// Clone returns a deep copy, so Step never changes the state it was given.
// It copies the values as they are (github.com/huandu/go-clone, by
// reflection over each type once; time.Time as a value), several times
// cheaper than the JSON round trip it replaces: a state is cloned on every
// step. The state is plain data (no pointer cycles, no funcs or
// channels), which is what Clone needs.
func (s State) Clone() State { return clone.Clone(s) }

// Done reports whether the job has finished.
func (s *State) Done() bool { return s.Phase == PhaseDone }

// InputKind says what happened.
type InputKind string

const (
	InputSubmitted   InputKind = "submitted"
	InputStageResult InputKind = "stage_result"
	InputCancel      InputKind = "cancel"
	// InputStageStarted is a worker's notice that it started a pending
	// stage (started.go): it marks the stage running, and changes nothing else.
	InputStageStarted InputKind = "stage_started"
	// InputAbort ends a running job as failed with Reason: the coordinator's
	// own verdict when the job cannot go on (abort.go).
	InputAbort InputKind = "abort"
)

// Input is what Step takes: something that happened to the job (a
// submission, a stage result, a cancellation). It is called Input, not
// Event, so it is not mistaken for the progress events (messages.Event)
// that Step emits. Time is the coordinator's clock when it was taken: Step
// itself never reads a clock. Recorded inputs are the replay logs in
// testdata (*.events.jsonl).
type Input struct {
	Kind   InputKind             `json:"kind"`
	Time   time.Time             `json:"time"`
	Submit *Submission           `json:"submit,omitempty"`
	Result *messages.StageResult `json:"result,omitempty"`
	Reason string                `json:"reason,omitempty"` // cancel, abort
	By     string                `json:"by,omitempty"`     // cancel: who asked (messages.CancelJob.By)
	// Started is the notice of an InputStageStarted.
	Started *messages.StageStarted `json:"started,omitempty"`
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

func planOf(s *State) messages.Plan {
	if s.Plan == nil {
		return messages.Plan{}
	}
	return *s.Plan
}

func testsOf(s *State) string {
	if s.Tests == nil {
		return ""
	}
	return s.Tests.Code
}
