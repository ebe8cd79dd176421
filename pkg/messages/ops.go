package messages

import "time"

// What operators see and do (issue 25): when a worker starts a stage, the
// capacity each worker advertises, a pool paused and resumed, the queues
// and workers view, and the error body of every HTTP route.

// StageStarted is a worker's notice that it took stage command Seq of job
// JobID and started it: after admission, on a cache miss, before its
// handler runs. The coordinator records it on the pending stage and emits
// a stage_started event, so a stage's wait in its pool's queue and its
// run are told apart. It travels on core NATS (best effort): a lost
// notice loses only that mark, since the result carries started_at too.
type StageStarted struct {
	V         int       `json:"v"`
	JobID     string    `json:"job_id"`
	Seq       int       `json:"seq"`
	Stage     Stage     `json:"stage"`
	Worker    string    `json:"worker,omitempty"`
	StartedAt time.Time `json:"started_at"` // the worker's clock
}

// WorkerBeat is what a stage worker advertises, every few seconds, in the
// workers bucket (autocoder_workers, whose entries expire when the beats
// stop): its pool, its slots (how many stages it runs at once) and how
// many it runs now. The sum over a pool's live workers is the pool's
// capacity.
type WorkerBeat struct {
	V         int       `json:"v"`
	Pool      string    `json:"pool"`
	Worker    string    `json:"worker"` // AUTOCODER_WORKER_NAME
	Instance  string    `json:"instance"`
	Slots     int       `json:"slots"`
	InFlight  int       `json:"in_flight"`
	Paused    bool      `json:"paused,omitempty"` // its pool is paused: it fetches nothing new
	StartedAt time.Time `json:"started_at"`
	At        time.Time `json:"at"` // this beat, the worker's clock
}

// PoolPause is a pool's pause switch, in the pools bucket
// (autocoder_pools) under the pool's name. A paused pool's workers fetch
// no new stage command; those they run finish. Stage commands wait in the
// queue (and their stage deadlines run) until the pool is resumed.
type PoolPause struct {
	V      int       `json:"v"`
	Pool   string    `json:"pool"`
	Paused bool      `json:"paused"`
	By     string    `json:"by,omitempty"` // who switched it, as CancelJob.By
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Bounds of PoolPause's free text.
const (
	MaxPauseByBytes     = MaxCancelByBytes
	MaxPauseReasonBytes = MaxCancelReasonBytes
)

// PoolView is one worker pool in the queues view: its queue and its
// workers.
type PoolView struct {
	Pool string `json:"pool"`
	// Pending are the stage commands waiting for a worker, and
	// OldestPendingSeconds how long the first of them has waited.
	Pending              uint64  `json:"pending"`
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
	// InFlight are the commands delivered to a worker and not yet done.
	InFlight int `json:"in_flight"`
	// Slots is the pool's capacity: the slots of its live workers.
	Slots int `json:"slots"`
	// Saturation is InFlight / Slots (0 without slots).
	Saturation float64      `json:"saturation"`
	Workers    []WorkerBeat `json:"workers"`
	// Pause is the pool's pause switch, nil if it was never switched.
	Pause *PoolPause `json:"pause,omitempty"`
}

// QueuesView is GET /v1/queues: every pool, by name.
type QueuesView struct {
	V     int        `json:"v"`
	Pools []PoolView `json:"pools"`
	At    time.Time  `json:"at"`
}

// HTTPError is the body of every HTTP API answer that is an error:
// {"error": "no job job-1", "code": "not_found"}. It has the shape of
// APIReply's error (error, field), which the message API's routes answer
// with, code included, so a client reads every error the same way: Code
// for a program, Error for a person, Field for a request that is wrong.
type HTTPError struct {
	Error string `json:"error"`
	Code  string `json:"code"`            // one of the Code constants
	Field string `json:"field,omitempty"` // dotted path of the field at fault
}

// Codes of HTTPError.
const (
	CodeInvalid      = "invalid"      // 400: the request is wrong; Field says where
	CodeUnauthorized = "unauthorized" // 401: no token, or an unknown one
	CodeForbidden    = "forbidden"    // 403: the token lacks the scope
	CodeNotFound     = "not_found"    // 404: no such job, output, dead letter or page
	CodeMisdirected  = "misdirected"  // 421: a Host name this API does not answer
	CodeConflict     = "conflict"     // 409: the job has finished already
	CodeTooLarge     = "too_large"    // 413: the body is over its bound
	CodeUnavailable  = "unavailable"  // 503: NATS, a coordinator or a store did not answer: retry
	CodeInternal     = "internal"     // 500
	CodeNotReady     = "not_ready"    // 503 from /readyz
)
