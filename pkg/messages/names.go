package messages

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"time"
)

// The NATS names a producer outside autocoder's own processes needs (the
// message API, docs/api.md): where it submits, where it reads events,
// results and tasks, where it puts samples and finds outputs. They are
// part of the wire contract like the messages, so they live here, and
// internal/bus, which names everything else, refers to these.

// SubjectRoot is the root of every subject autocoder uses: autocoder.>.
const SubjectRoot = "autocoder"

// Subjects producers publish on.
const (
	// SubjectJobsSubmit carries SubmitJob (JetStream, stream StreamJobs).
	SubjectJobsSubmit = SubjectRoot + ".jobs.submit"
	// SubjectJobsCancel carries CancelJob (JetStream, stream StreamJobs).
	SubjectJobsCancel = SubjectRoot + ".jobs.cancel"
	// SubjectAPISubmit takes an APIRequest and answers an APIReply (core NATS request-reply).
	SubjectAPISubmit = SubjectRoot + ".api.submit"
	// SubjectAPITaskRun takes a TaskRunRequest and answers an APIReply.
	SubjectAPITaskRun = SubjectRoot + ".api.task.run"
	// SubjectAPIDLQReplay takes a ReplayRequest and answers a ReplayReply.
	SubjectAPIDLQReplay = SubjectRoot + ".api.dlq.replay"
)

// Streams, KV buckets and object stores producers read or write.
const (
	// StreamJobs holds submissions and cancellations until a coordinator takes them.
	StreamJobs = "AUTOCODER_JOBS"
	// StreamEvents keeps progress events (Event), one subject per job (EventSubject).
	StreamEvents = "AUTOCODER_EVENTS"
	// StreamDLQ keeps dead letters (DeadLetter).
	StreamDLQ = "AUTOCODER_DLQ"
	// BucketJobResults holds each finished job's Result, keyed by JobKey.
	BucketJobResults = "autocoder_job_results"
	// BucketJobIndex holds each job's JobSummary, keyed by JobKey.
	BucketJobIndex = "autocoder_job_index"
	// BucketTasks holds named tasks (Task), keyed by TaskKey.
	BucketTasks = "autocoder_tasks"
	// ObjectStoreSamples holds sample files and File/Dir inputs, named by ObjectRef.ObjectName.
	ObjectStoreSamples = "autocoder_samples"
	// ObjectStoreOutputs holds File and Dir outputs (a Dir as a DirManifest).
	ObjectStoreOutputs = "autocoder_outputs"
	// ObjectStoreClaims holds message bodies too large for a message (HeaderClaimCheck).
	ObjectStoreClaims = "autocoder_claims"
	// BucketWorkers holds each live stage worker's WorkerBeat, keyed
	// <pool>.<instance>; an entry expires when its worker stops beating.
	BucketWorkers = "autocoder_workers"
	// BucketPools holds each pool's PoolPause, keyed by the pool's name:
	// the switch the pool's workers watch.
	BucketPools = "autocoder_pools"
)

// Headers of autocoder's messages.
const (
	// HeaderJobID is the job a message is about.
	HeaderJobID = "Autocoder-Job-Id"
	// HeaderClaimCheck names the ObjectStoreClaims object ("sha256-<hex>")
	// holding a message's body, which is then empty on the subject.
	HeaderClaimCheck = "Autocoder-Claim-Check"
	// ClaimThreshold is the body size above which autocoder sends a
	// message by claim check.
	ClaimThreshold = 512 << 10
)

// EventSubject is where one job's progress events go:
// autocoder.events.<job_id>. jobID must satisfy ValidJobID.
func EventSubject(jobID string) string { return SubjectRoot + ".events." + jobID }

// SubmitMsgID is the Nats-Msg-Id of a job's submission: a submission
// published twice within the stream's window is taken once.
func SubmitMsgID(jobID string) string { return "submit." + jobID }

// CancelMsgID is the Nats-Msg-Id of a request to cancel a job.
func CancelMsgID(jobID string) string { return "cancel." + jobID }

// JobKey is the key of a job in BucketJobResults and BucketJobIndex.
func JobKey(jobID string) string { return jobID }

// TaskKey is the key of a task in BucketTasks; name must satisfy ValidTaskName.
func TaskKey(name string) string { return name }

// MaxJobIDLen bounds a job ID: it appears in subjects, keys and Msg-Ids.
const MaxJobIDLen = 128

var jobIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidJobID reports whether id can be a job ID: 1 to MaxJobIDLen
// characters from [A-Za-z0-9_-], so it is one subject token and a key
// (a dot, a wildcard or a space would move the job's messages elsewhere).
func ValidJobID(id string) bool {
	return len(id) > 0 && len(id) <= MaxJobIDLen && jobIDRe.MatchString(id)
}

// NewJobID returns a fresh job ID: time-ordered, then random.
func NewJobID() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "job-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Who asks. NATS does not stamp a message with its sender, so a request
// that must say who sent it (a cancellation, a task kept or deleted) goes
// on a subject that ends with the sender's NATS user name, and the
// server's permissions let each producer publish only on its own
// (docs/security.md). The subjects without a name are the coordinator
// role's: it sends them for the HTTP API and for an operator acting as
// admin.

var identityRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidIdentity reports whether name can end a subject as one token: a
// NATS user name or nkey, or a tool name.
func ValidIdentity(name string) bool { return identityRe.MatchString(name) }

// CancelSubject is where producer name asks to cancel a job:
// autocoder.jobs.cancel.<name> (JetStream, stream StreamJobs; the
// coordinator records "nats:<name>" as who cancelled). name must satisfy
// ValidIdentity.
func CancelSubject(name string) string { return SubjectJobsCancel + "." + name }

// Operations on named tasks through the coordinator (TaskSubject).
const (
	TaskRegister = "register"
	TaskDelete   = "delete"
)

// TaskSubject is where producer name asks the coordinator to register or
// delete (op) a task with a TaskRequest, answered by a TaskReply (core
// NATS request-reply): autocoder.api.task.<op>.<name>. With name "" it
// is the admin's subject, autocoder.api.task.<op>, which only the
// coordinator role may publish on.
func TaskSubject(op, name string) string {
	if name == "" {
		return SubjectRoot + ".api.task." + op
	}
	return SubjectRoot + ".api.task." + op + "." + name
}
