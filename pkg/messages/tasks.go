package messages

// Named tasks are kept by the coordinator, which knows who asks by the
// subject of the request (docs/api.md): a producer registers a task, and
// only it (or an admin) replaces or deletes it.

// TaskRequest asks the coordinator to register a task (Name for the
// script of the finished, successful job JobID) or to delete one (Name).
type TaskRequest struct {
	V           int    `json:"v"`
	Name        string `json:"name"`
	JobID       string `json:"job_id,omitempty"`
	Description string `json:"description,omitempty"`
	// Defaults are the settings of the task's runs (Task.Defaults).
	Defaults *RunOptions `json:"defaults,omitempty"`
	// Owner is who the task is kept for when the coordinator role asks on
	// the admin's subject for someone it authenticated itself (the HTTP
	// API: "http:<token name>"); empty there, the admin. On a producer's
	// own subject it must be empty: the subject says who asks.
	Owner string `json:"owner,omitempty"`
	// Create refuses a name that is registered already (ReplyExists),
	// checked and written in one step; without it a task of the same
	// owner is replaced.
	Create bool `json:"create,omitempty"`
}

// TaskReply answers a TaskRequest: the task registered, or the error.
type TaskReply struct {
	V     int    `json:"v"`
	Task  *Task  `json:"task,omitempty"`
	Error string `json:"error,omitempty"`
	// Kind is ReplyInvalid for a request that is wrong, ReplyNotFound for
	// a task that does not exist, ReplyForbidden for a task owned by
	// another, ReplyExists for a Create of a name registered already,
	// ReplyUnavailable for a failure of autocoder's own.
	Kind string `json:"kind,omitempty"`
	// Field names the field at fault of a ReplyInvalid.
	Field string `json:"field,omitempty"`
}

// Kinds of TaskReply errors besides ReplyInvalid and ReplyUnavailable.
const (
	ReplyNotFound  = "not_found"
	ReplyForbidden = "forbidden"
	ReplyExists    = "exists"
)
