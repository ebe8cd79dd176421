package messages

import "time"

// JobSummary is one job's line in the job index (the job list of the web
// UI and GET /v1/summaries): small, written by the coordinator whenever
// the job's state changes, so a list never loads full states. Rejected
// submissions have one too.
type JobSummary struct {
	V           int        `json:"v"`
	JobID       string     `json:"job_id"`
	Name        string     `json:"name,omitempty"`
	Status      JobStatus  `json:"status"`
	Phase       string     `json:"phase,omitempty"`   // where a running job is (profiling, testing, ...)
	Running     []Stage    `json:"running,omitempty"` // stages dispatched and not answered yet
	Queued      []Stage    `json:"queued,omitempty"`  // those of Running no worker has started yet
	Prompt      string     `json:"prompt,omitempty"`  // trimmed
	Error       string     `json:"error,omitempty"`   // trimmed
	Iterations  int        `json:"iterations"`
	Tokens      int        `json:"tokens"` // input and output tokens of every model call
	LLMCalls    int        `json:"llm_calls"`
	CacheHits   int        `json:"cache_hits"`
	SubmittedAt time.Time  `json:"submitted_at"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
}

// Iteration is one test run of a job's own line, as the web UI shows it:
// the code and tests it ran, the report, and the diagnosis and repairs it
// led to. The coordinator keeps the last few of each job, bounded.
type Iteration struct {
	Iteration int         `json:"iteration"`
	Code      string      `json:"code"`
	Tests     string      `json:"tests"`
	Packages  []string    `json:"packages,omitempty"`
	Report    *TestReport `json:"report,omitempty"` // nil while the run is in flight
	Diagnosis *Diagnosis  `json:"diagnosis,omitempty"`
	// Routes are the repairs the diagnosis led to, one per failing test,
	// after any reclassification.
	Routes []RepairRoute `json:"routes,omitempty"`
	// Acceptance is the run of the script on the samples after the tests passed.
	Acceptance *AcceptanceOutput `json:"acceptance,omitempty"`
	// Trimmed says the code or tests were cut to keep the job state small.
	Trimmed bool `json:"trimmed,omitempty"`
}

// RepairRoute is the repair one failing test got in a round.
type RepairRoute struct {
	Test  string    `json:"test"`
	Class ErrorType `json:"class,omitempty"` // the final classification
	Route string    `json:"route,omitempty"` // fix, patch, packages or regenerate
	// Flips are its reclassifications so far, e.g. "test_error->logic".
	Flips   []string `json:"flips,omitempty"`
	Applied bool     `json:"applied,omitempty"` // the repair was verified as applied
}
