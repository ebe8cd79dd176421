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
