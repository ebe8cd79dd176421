package bus

import (
	"slices"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Every stream, subject, consumer, bucket, object store and header name that
// autocoder uses on NATS is built here and nowhere else (asynq's
// base.PendingKey idea), so a rename is one edit and a grep finds every user.
// Those a producer outside autocoder needs (pkg/client, any language) are
// part of the wire contract: they are defined in pkg/messages/names.go and
// only named here.

// Subjects. Everything autocoder publishes lives under "autocoder.>".
const (
	subjectRoot = messages.SubjectRoot

	// SubjectJobsSubmit carries messages.SubmitJob.
	SubjectJobsSubmit = messages.SubjectJobsSubmit
	// SubjectJobsCancel carries messages.CancelJob: a request to cancel a
	// job, kept in the jobs stream like a submission, so a coordinator that
	// is down takes it when it is back. Only the coordinator role publishes
	// on it; a producer asks on CancelSubject(its name).
	SubjectJobsCancel = messages.SubjectJobsCancel
	// SubjectJobsAll matches every job subject (the jobs stream's subjects).
	SubjectJobsAll = subjectRoot + ".jobs.>"
	// SubjectResultsAll matches every pool's stage results (each pool's
	// results have a stream of their own: ResultStream).
	SubjectResultsAll = subjectRoot + ".results.>"
	// SubjectEventsAll matches every job's progress events.
	SubjectEventsAll = subjectRoot + ".events.>"
	// SubjectCancelledAll matches every job's cancellation notice
	// (CancelledSubject), which workers subscribe to.
	SubjectCancelledAll = subjectRoot + ".cancelled.*"
)

// Streams.
const (
	// StreamJobs holds job submissions until the coordinator takes them (work queue).
	StreamJobs = messages.StreamJobs
	// StreamEvents keeps progress events for live views and `submit events` (limits, max age).
	StreamEvents = messages.StreamEvents
)

// Durable consumers that are not per pool.
const (
	// ConsumerCoordinator is the durable pull consumer coordinators share, on
	// StreamJobs and on each pool's ResultStream (consumer names are per stream).
	ConsumerCoordinator = "coordinator"
)

// legacyStreamResults is the one results stream of autocoder before each
// pool had its own; it captured SubjectResultsAll, which overlaps every
// ResultStream, so Provision retires it (provisioner.retireLegacyResults).
const legacyStreamResults = "AUTOCODER_RESULTS"

// KV buckets and object stores. Bucket names allow [A-Za-z0-9_-] only.
const (
	// BucketJobState holds each job's state machine, keyed by job ID (history 1, CAS on revision).
	BucketJobState = "autocoder_job_state"
	// BucketJobResults holds each job's result object (Contract 5 (docs/contracts.md)), keyed by job ID.
	BucketJobResults = messages.BucketJobResults
	// ObjectStoreSamples holds sample files, named by messages.ObjectRef.ObjectName.
	ObjectStoreSamples = messages.ObjectStoreSamples
	// ObjectStoreOutputs holds File/Dir outputs of acceptance and script runs.
	ObjectStoreOutputs = messages.ObjectStoreOutputs
	// BucketJobIndex holds each job's summary line (messages.JobSummary),
	// keyed by job ID: the job list reads it instead of full states.
	BucketJobIndex = messages.BucketJobIndex
	// ObjectStoreClaims holds message bodies too large for a message, by
	// content hash (claim check, see HeaderClaimCheck).
	ObjectStoreClaims = messages.ObjectStoreClaims
	// BucketTasks holds named reusable tasks (messages.Task), keyed by TaskKey.
	BucketTasks = messages.BucketTasks
)

// Headers set by Publisher on messages it knows (see Publisher.PublishJSON),
// read by Message.JobID and Message.Stage for the worker's log lines.
const (
	HeaderJobID = messages.HeaderJobID
	HeaderStage = "Autocoder-Stage"
)

// StageSubject is where the coordinator publishes a command for stage,
// which pool does: autocoder.stage.<pool>.<stage>.
func StageSubject(pool messages.Pool, stage messages.Stage) string {
	return subjectRoot + ".stage." + string(pool) + "." + string(stage)
}

// StageSubjects matches every stage command of one pool: autocoder.stage.<pool>.>.
func StageSubjects(pool messages.Pool) string { return subjectRoot + ".stage." + string(pool) + ".>" }

// StageStream is the work-queue stream of one pool's stage commands, e.g. AUTOCODER_STAGE_LLM.
func StageStream(pool messages.Pool) string {
	return "AUTOCODER_STAGE_" + strings.ToUpper(string(pool))
}

// StageConsumer is the durable pull consumer a pool's workers share, e.g. "llm-workers".
func StageConsumer(pool messages.Pool) string { return string(pool) + "-workers" }

// ResultSubject is where the workers of pool publish stage results of one
// job: autocoder.results.<pool>.<job_id>. A pool of its own in the subject
// lets NATS permissions give each pool's credentials only its own results
// (PoolResultSubjects), and lets the coordinator check that a result came
// from the pool its stage was dispatched to (ParseResultSubject). jobID
// must satisfy ValidJobID.
func ResultSubject(pool messages.Pool, jobID string) string {
	return subjectRoot + ".results." + string(pool) + "." + jobID
}

// PoolResultSubjects matches every result subject of one pool:
// autocoder.results.<pool>.* (a job ID is one token).
func PoolResultSubjects(pool messages.Pool) string {
	return subjectRoot + ".results." + string(pool) + ".*"
}

// ResultStream is the work-queue stream of one pool's stage results, e.g.
// AUTOCODER_RESULTS_SANDBOX, capturing PoolResultSubjects(pool). One stream
// per pool because JetStream de-duplicates Nats-Msg-Ids per stream: in a
// shared stream, a result published by one pool with the Msg-Id the other
// pool's real result will use (ResultMsgID) would have the real one dropped
// as a duplicate. The coordinators take each with ConsumerCoordinator.
func ResultStream(pool messages.Pool) string {
	return "AUTOCODER_RESULTS_" + strings.ToUpper(string(pool))
}

// ParseResultSubject returns the pool and job ID of a result subject; ok is
// false for anything else, including a pool that does not exist.
func ParseResultSubject(subject string) (pool messages.Pool, jobID string, ok bool) {
	return parsePoolJob(subject, subjectRoot+".results.")
}

// OfferSubject is where the workers of pool offer a stage result of one
// job to the coordinators, as a core NATS request, before they publish it
// on ResultSubject: autocoder.offers.<pool>.<job_id>. A coordinator that
// takes it (answers OfferTaken) has stored it in the job's state, so the
// result stream is not needed (Publisher.OfferJSON). No stream captures
// these subjects.
func OfferSubject(pool messages.Pool, jobID string) string {
	return subjectRoot + ".offers." + string(pool) + "." + jobID
}

// PoolOfferSubjects matches every offer subject of one pool:
// autocoder.offers.<pool>.*.
func PoolOfferSubjects(pool messages.Pool) string {
	return subjectRoot + ".offers." + string(pool) + ".*"
}

// ParseOfferSubject returns the pool and job ID of an offer subject; ok is
// false for anything else.
func ParseOfferSubject(subject string) (pool messages.Pool, jobID string, ok bool) {
	return parsePoolJob(subject, subjectRoot+".offers.")
}

// parsePoolJob parses <prefix><pool>.<job_id>.
func parsePoolJob(subject, prefix string) (pool messages.Pool, jobID string, ok bool) {
	rest, ok := strings.CutPrefix(subject, prefix)
	if !ok {
		return "", "", false
	}
	p, id, ok := strings.Cut(rest, ".")
	if !ok || !slices.Contains(messages.Pools(), messages.Pool(p)) || !ValidJobID(id) {
		return "", "", false
	}
	return messages.Pool(p), id, true
}

// EventSubject is where progress events of one job go: autocoder.events.<job_id>.
// jobID must satisfy ValidJobID.
func EventSubject(jobID string) string { return messages.EventSubject(jobID) }

// CancelledSubject is where the coordinator announces, on core NATS, that
// job jobID was cancelled, so workers stop its stages in flight:
// autocoder.cancelled.<job_id>. jobID must satisfy ValidJobID.
func CancelledSubject(jobID string) string { return subjectRoot + ".cancelled." + jobID }

// JobIDFromSubject returns the job ID of a result or event subject.
func JobIDFromSubject(subject string) (string, bool) {
	if _, id, ok := ParseResultSubject(subject); ok {
		return id, true
	}
	if id, ok := strings.CutPrefix(subject, subjectRoot+".events."); ok && ValidJobID(id) {
		return id, true
	}
	return "", false
}

// StartedSubject is where a worker of pool announces, on core NATS, that
// it started a stage of job jobID (messages.StageStarted):
// autocoder.started.<pool>.<job_id>. As with results, the pool in the
// subject lets permissions give each pool's credentials only its own, and
// lets the coordinator check that a notice came from the pool of its
// stage (ParseStartedSubject). jobID must satisfy ValidJobID.
func StartedSubject(pool messages.Pool, jobID string) string {
	return subjectRoot + ".started." + string(pool) + "." + jobID
}

// PoolStartedSubjects matches every started subject of one pool:
// autocoder.started.<pool>.*.
func PoolStartedSubjects(pool messages.Pool) string {
	return subjectRoot + ".started." + string(pool) + ".*"
}

// SubjectStartedAll matches every pool's started notices, which the
// coordinators take in the queue group QueueAPI.
const SubjectStartedAll = subjectRoot + ".started.>"

// ParseStartedSubject returns the pool and job ID of a started subject; ok
// is false for anything else.
func ParseStartedSubject(subject string) (pool messages.Pool, jobID string, ok bool) {
	rest, ok := strings.CutPrefix(subject, subjectRoot+".started.")
	if !ok {
		return "", "", false
	}
	p, id, ok := strings.Cut(rest, ".")
	if !ok || !ValidPool(messages.Pool(p)) || !ValidJobID(id) {
		return "", "", false
	}
	return messages.Pool(p), id, true
}

// Operations: the workers' capacity beats and the pools' pause switches.
const (
	// BucketWorkers holds each live stage worker's messages.WorkerBeat,
	// keyed by WorkerKey; its entries expire (ProvisionConfig.WorkerBeatTTL)
	// when a worker stops beating.
	BucketWorkers = messages.BucketWorkers
	// BucketPools holds each pool's messages.PoolPause, keyed by PoolKey:
	// the switch the pool's workers watch.
	BucketPools = messages.BucketPools
)

// WorkerKey is the key of one worker process of pool in BucketWorkers:
// <pool>.<instance>. instance must be a key token ([A-Za-z0-9_-]).
func WorkerKey(pool messages.Pool, instance string) string { return string(pool) + "." + instance }

// PoolKey is the key of pool's pause switch in BucketPools.
func PoolKey(pool messages.Pool) string { return string(pool) }

// poolWorkerKeys matches the keys of pool's workers in BucketWorkers: the
// subjects a worker of pool puts its beats on.
func poolWorkerKeys(pool messages.Pool) string {
	return "$KV." + BucketWorkers + "." + string(pool) + ".*"
}

// ValidPool reports whether p is one of Pools.
func ValidPool(p messages.Pool) bool { return slices.Contains(messages.Pools(), p) }

// Msg-Id values for JetStream de-duplication. The same logical message always
// gets the same ID, so a coordinator that replays a command (or a worker that
// re-publishes a result after a redelivery) inside the stream's duplicate
// window is dropped by the server.

// SubmitMsgID is the Nats-Msg-Id of a job submission.
func SubmitMsgID(jobID string) string { return messages.SubmitMsgID(jobID) }

// CancelMsgID is the Nats-Msg-Id of a request to cancel a job: a job is
// cancelled once, so repeated requests within the window are one.
func CancelMsgID(jobID string) string { return messages.CancelMsgID(jobID) }

// QueueResultOffers is the core NATS queue group in which coordinators
// take the stage results workers offer them (OfferSubject): one
// coordinator hears each offer.
const QueueResultOffers = "autocoder-coordinators"

// StageMsgID is the Nats-Msg-Id of a stage command; seq is unique within the job.
func StageMsgID(jobID string, seq int) string { return "stage." + jobID + "." + strconv.Itoa(seq) }

// ResultMsgID is the Nats-Msg-Id of the result of stage command seq, as
// published by pool. Each pool's results are de-duplicated in the pool's
// own ResultStream, so a Msg-Id another pool publishes never shadows it.
func ResultMsgID(pool messages.Pool, jobID string, seq int) string {
	return "result." + string(pool) + "." + jobID + "." + strconv.Itoa(seq)
}

// JobKey is the key of a job in BucketJobState, BucketJobResults and BucketJobIndex.
func JobKey(jobID string) string { return messages.JobKey(jobID) }

// TaskKey is the key of a task in BucketTasks. name must satisfy
// messages.ValidTaskName.
func TaskKey(name string) string { return messages.TaskKey(name) }

// MaxJobIDLen bounds a job ID: it appears in subjects, KV keys and Msg-Ids.
const MaxJobIDLen = messages.MaxJobIDLen

// NewJobID returns a fresh job ID: time-ordered, then random.
func NewJobID() string { return messages.NewJobID() }

// ValidJobID reports whether id can be used as one subject token and KV key
// (messages.ValidJobID). Validate at the edge (submit, HTTP API), before
// building subjects.
func ValidJobID(id string) bool { return messages.ValidJobID(id) }

// Names nats.go gives the streams behind KV buckets and object stores, and
// the JetStream API subjects, for the role permissions (permissions.go).

// kvStream is the stream behind KV bucket: KV_<bucket>.
func kvStream(bucket string) string { return "KV_" + bucket }

// kvSubjects matches every key of KV bucket: $KV.<bucket>.>.
func kvSubjects(bucket string) string { return "$KV." + bucket + ".>" }

// objStream is the stream behind object store bucket: OBJ_<bucket>.
func objStream(bucket string) string { return "OBJ_" + bucket }

// objSubjects matches every chunk and meta subject of object store bucket: $O.<bucket>.>.
func objSubjects(bucket string) string { return "$O." + bucket + ".>" }

// jsAPI is a JetStream API subject: $JS.API.<op>.
func jsAPI(op string) string { return "$JS.API." + op }

// ackSubjects matches the ack replies of one consumer's messages: $JS.ACK.<stream>.<consumer>.>.
func ackSubjects(stream, consumer string) string { return "$JS.ACK." + stream + "." + consumer + ".>" }

// flowControlSubjects matches the flow-control replies of push consumers on stream: $JS.FC.<stream>.>.
func flowControlSubjects(stream string) string { return "$JS.FC." + stream + ".>" }

// InboxPrefix is where a connection of role gets its request replies
// (nats.CustomInboxPrefix): a role may read only its own inboxes, so no
// client reads the replies (pulled commands, KV reads) meant for another.
func InboxPrefix(role Role) string { return "_INBOX_" + strings.ReplaceAll(string(role), "-", "_") }

// ToolSubjects matches the calls of every code-mode tool served on NATS:
// autocoder.tool.<name> (internal/codemode.ToolSubject).
func ToolSubjects() string { return subjectRoot + ".tool.*" }

// ToolInbox matches the inboxes on which a connection of role hears the
// answers of its tool requests, calls and descriptions:
// <InboxPrefix(role)>.tools.> (internal/codemode.ToolInboxToken).
func ToolInbox(role Role) string { return InboxPrefix(role) + ".tools.>" }

// ToolSubject is where the calls of code-mode tool name go:
// autocoder.tool.<name> (internal/codemode.ToolSubject).
func ToolSubject(name string) string { return subjectRoot + ".tool." + name }

// Who asks. NATS does not stamp a message with its sender, so a request
// that must say who sent it (a cancellation, a task kept or deleted) is
// sent on a subject that ends with the sender's name, and the permission
// table lets each producer publish only on its own (PermissionsOf). The
// subjects without a name are the coordinator role's: its own
// connection sends them for the HTTP API (which knows the caller's token
// name) and for an operator acting as admin.

// ValidIdentity reports whether name can end a subject as one token
// (messages.ValidIdentity).
func ValidIdentity(name string) bool { return messages.ValidIdentity(name) }

// CancelSubject is where producer name asks to cancel a job:
// autocoder.jobs.cancel.<name> (messages.CancelSubject; SubjectJobsCancel
// without a name is the coordinator role's).
func CancelSubject(name string) string { return messages.CancelSubject(name) }

// ParseCancelSubject says who asked for a cancellation by its subject:
// "nats:<user>" on CancelSubject(user); trusted is true on
// SubjectJobsCancel, where the request's own by is believed (only the
// coordinator role publishes there).
func ParseCancelSubject(subject string) (by string, trusted, ok bool) {
	if subject == SubjectJobsCancel {
		return "", true, true
	}
	name, found := strings.CutPrefix(subject, SubjectJobsCancel+".")
	if !found || !ValidIdentity(name) {
		return "", false, false
	}
	return "nats:" + name, false, true
}

// Operations on named tasks through the coordinator (TaskSubject).
const (
	TaskRegister = messages.TaskRegister
	TaskDelete   = messages.TaskDelete
)

// TaskSubject is where producer name asks the coordinator to register
// or delete (op) a task (messages.TaskSubject); with name "" it is the
// admin's subject, which only the coordinator role may publish on: an
// admin replaces or deletes any task.
func TaskSubject(op, name string) string { return messages.TaskSubject(op, name) }

// ParseTaskSubject is the operation and the asker of a TaskSubject:
// owner "nats:<user>", or admin for the subject without a name.
func ParseTaskSubject(subject string) (op, owner string, admin, ok bool) {
	rest, found := strings.CutPrefix(subject, subjectRoot+".api.task.")
	if !found {
		return "", "", false, false
	}
	op, name, named := strings.Cut(rest, ".")
	if op != TaskRegister && op != TaskDelete {
		return "", "", false, false
	}
	if !named {
		return op, "", true, true
	}
	if !ValidIdentity(name) {
		return "", "", false, false
	}
	return op, "nats:" + name, false, true
}

// ServiceInfoSubjects matches the micro framework's description requests
// by service name, $SRV.INFO.<name>: how a code-mode tool is discovered.
func ServiceInfoSubjects() string { return "$SRV.INFO.*" }

// ServiceSubjects matches every micro framework control request ($SRV.>),
// which a service answers.
func ServiceSubjects() string { return "$SRV.>" }

// The message API (docs/api.md): core NATS request-reply subjects the
// coordinators answer in a queue group, and the dead letters.
const (
	// SubjectAPISubmit takes a messages.APIRequest and answers a
	// messages.APIReply: the job ID, or the error naming the field.
	SubjectAPISubmit = messages.SubjectAPISubmit
	// SubjectAPITaskRun takes a messages.TaskRunRequest and answers a messages.APIReply.
	SubjectAPITaskRun = messages.SubjectAPITaskRun
	// SubjectAPIDLQReplay takes a messages.ReplayRequest and answers a messages.ReplayReply.
	SubjectAPIDLQReplay = messages.SubjectAPIDLQReplay
	// QueueAPI is the queue group of the coordinators on the API subjects:
	// each request is answered by one of them.
	QueueAPI = "coordinator-api"
	// SubjectReplies matches the subjects of results asked for with
	// reply_to (messages.ReplyToPrefix).
	SubjectReplies = subjectRoot + ".replies.>"
	// SubjectDLQ is where dead letters (messages.DeadLetter) are published.
	SubjectDLQ = subjectRoot + ".dlq"
	// StreamDLQ keeps the dead letters (limits, max age) for inspection and replay.
	StreamDLQ = messages.StreamDLQ
	// BucketReplyTo maps a job ID to the reply_to subject of its request.
	BucketReplyTo = "autocoder_reply_to"
)

// AdvisoryMaxDeliveries matches JetStream's max-deliveries advisories of
// every consumer: $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>.
const AdvisoryMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>"

// DeadLetterMsgID is the Nats-Msg-Id of the dead letter of message seq of
// stream: one letter per message, however many coordinators hear the advisory.
func DeadLetterMsgID(stream string, seq uint64) string {
	return "dlq." + stream + "." + strconv.FormatUint(seq, 10)
}

// ReplayMsgID is the Nats-Msg-Id of the replay of dead letter seq: not the
// original message's, which the stream may still remember and drop.
func ReplayMsgID(dlqSeq uint64) string { return "replay." + strconv.FormatUint(dlqSeq, 10) }

// ReplyToKey is the key of a job in BucketReplyTo.
func ReplyToKey(jobID string) string { return jobID }
