package bus

import (
	"fmt"
	"slices"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Role is what a NATS user may do on an authenticated NATS: the embedded
// server's users file names one per user (see LoadUsers), and the
// deploy/compose NATS configuration is generated from the same table.
type Role string

const (
	// RoleCoordinator owns the deployment: it provisions the streams, takes
	// submissions and results, publishes stage commands and writes job state.
	RoleCoordinator Role = "coordinator"
	// RoleLLMWorker takes the llm pool's stage commands and publishes results.
	RoleLLMWorker Role = "llm-worker"
	// RoleSandboxWorker takes the sandbox pool's stage commands, reads
	// samples, writes outputs and publishes results.
	RoleSandboxWorker Role = "sandbox-worker"
	// RoleProducer submits jobs (the submit CLI, the HTTP API of another
	// process), uploads samples and reads results, events and tasks.
	RoleProducer Role = "producer"
	// RoleToolServer serves code-mode tools (internal/codemode.ServeTool):
	// it answers their calls and the micro framework's discovery requests,
	// and may publish only the replies to the sandbox-workers who ask.
	RoleToolServer Role = "tool-server"
)

// Permission is what a role may publish and subscribe to: NATS subjects,
// wildcards allowed; anything not listed is refused by the server.
type Permission struct {
	Publish   []string `json:"publish"`
	Subscribe []string `json:"subscribe"`
}

// Roles lists every role, in a stable order.
func Roles() []Role {
	return []Role{RoleCoordinator, RoleLLMWorker, RoleSandboxWorker, RoleProducer, RoleToolServer}
}

// ValidRole reports whether r is one of Roles.
func ValidRole(r Role) bool { return slices.Contains(Roles(), r) }

// PermissionsOf is the permission of role. It is the one place that says
// who may do what; every list is built from the names in names.go.
//
// Why these: a stage command is code the sandbox runs and a model call the
// operator pays for, so only the coordinator publishes them; a result
// decides what a job returns, so only workers publish results and only
// the coordinator writes job state. A worker pulls and acks its own pool's
// consumer only. Everyone may look up streams and consumers (read-only
// metadata) so that a process can bind to what the coordinator provisioned.
func PermissionsOf(role Role) (Permission, error) {
	var p Permission
	switch role {
	case RoleCoordinator:
		// The owner provisions and repairs everything: the whole account.
		return Permission{Publish: []string{">"}, Subscribe: []string{">"}}, nil
	case RoleLLMWorker:
		p = worker(messages.PoolLLM)
		p.Publish = append(p.Publish, readStream(objStream(ObjectStoreSamples))...) // jobs' context bundles (llmstages/context.go)
	case RoleSandboxWorker:
		p = worker(messages.PoolSandbox)
		p.Publish = append(p.Publish, readStream(objStream(ObjectStoreSamples))...)
		p.Publish = append(p.Publish, readStream(objStream(ObjectStoreOutputs))...)
		p.Publish = append(p.Publish, writeObjects(ObjectStoreOutputs)...)
		p.Publish = append(p.Publish, codeModeTools...)
	case RoleProducer:
		p = producer()
	case RoleToolServer:
		p = Permission{Publish: []string{InboxPrefix(RoleSandboxWorker) + ".>"}, Subscribe: []string{ToolSubjects(), ServiceSubjects()}}
	default:
		return Permission{}, fmt.Errorf("bus: unknown role %q (want one of %v)", role, Roles())
	}
	p.Publish = append(lookups(), p.Publish...)
	// Every role publishes and reads messages, so every role writes and
	// reads claim-checked bodies; a reader checks a body against its
	// content-hash name, so a writer cannot swap one.
	p.Publish = append(p.Publish, readStream(objStream(ObjectStoreClaims))...)
	p.Publish = append(p.Publish, writeObjects(ObjectStoreClaims)...)
	p.Subscribe = append(p.Subscribe, InboxPrefix(role)+".>")
	return p, nil
}

// codeModeTools are what the sandbox-workers' code-mode stages request of
// tools served as NATS micro services (internal/codemode): a tool's
// description by its service name, and its calls.
var codeModeTools = []string{ServiceInfoSubjects(), ToolSubjects()}

// worker may pull and ack its pool's stage commands, publish results on
// its pool's result subjects only (which only its pool's ResultStream
// captures, so its Msg-Ids never shadow another pool's), and read (never write) job state, which
// it checks before running a command (stagework's admission). It hears
// cancellations (CancelledSubject) to stop a cancelled job's stages. It
// announces the stages it starts and beats its capacity, each under its
// own pool's name only, and watches the pools' pause switches.
func worker(pool messages.Pool) Permission {
	stream, consumer := StageStream(pool), StageConsumer(pool)
	state := kvStream(BucketJobState)
	p := Permission{Publish: []string{
		jsAPI("CONSUMER.MSG.NEXT." + stream + "." + consumer),
		ackSubjects(stream, consumer),
		PoolResultSubjects(pool),
		jsAPI("DIRECT.GET." + state), jsAPI("DIRECT.GET." + state + ".>"),
		jsAPI("STREAM.MSG.GET." + state),
		PoolStartedSubjects(pool), // stage_started notices (stagework)
		poolWorkerKeys(pool),      // its capacity beats (roster.go)
	}, Subscribe: []string{SubjectCancelledAll}}
	p.Publish = append(p.Publish, readStream(kvStream(BucketPools))...) // its pool's pause switch (pause.go)
	return p
}

// producer may submit and cancel jobs (on the jobs stream or the API
// subjects), upload samples, read results, state, outputs, events and dead
// letters, replay a dead letter through the coordinator, keep the named
// tasks, hear the results it asked for with reply_to, read the queues and
// workers, and pause and resume a pool (an operator's CLI runs as a
// producer).
func producer() Permission {
	pub := []string{SubjectJobsSubmit, SubjectJobsCancel, SubjectAPISubmit, SubjectAPITaskRun, SubjectAPIDLQReplay}
	for _, s := range []string{StreamEvents, StreamDLQ, kvStream(BucketJobResults), kvStream(BucketJobState), kvStream(BucketJobIndex), kvStream(BucketTasks),
		objStream(ObjectStoreSamples), objStream(ObjectStoreOutputs), kvStream(BucketWorkers), kvStream(BucketPools)} {
		pub = append(pub, readStream(s)...)
	}
	pub = append(pub, writeObjects(ObjectStoreSamples)...)
	pub = append(pub, kvSubjects(BucketTasks), kvSubjects(BucketPools))
	return Permission{Publish: pub, Subscribe: []string{SubjectReplies}}
}

// lookups are the read-only metadata requests every role makes to bind to
// streams, consumers, buckets and object stores (Open).
func lookups() []string {
	return []string{jsAPI("INFO"), jsAPI("STREAM.INFO.*"), jsAPI("CONSUMER.INFO.*.*")}
}

// readStream lets a client read stream (not a work queue: reading one does
// not take anything away from its consumers): get a message, and run the
// ephemeral ordered consumers of KV watches, object reads and event views.
func readStream(stream string) []string {
	return []string{
		jsAPI("DIRECT.GET." + stream), jsAPI("DIRECT.GET." + stream + ".>"),
		jsAPI("STREAM.MSG.GET." + stream),
		jsAPI("CONSUMER.CREATE." + stream), jsAPI("CONSUMER.CREATE." + stream + ".>"),
		jsAPI("CONSUMER.DELETE." + stream + ".>"),
		jsAPI("CONSUMER.MSG.NEXT." + stream + ".>"),
		flowControlSubjects(stream),
	}
}

// writeObjects lets a client put objects into bucket; overwriting an object
// purges its old chunks.
func writeObjects(bucket string) []string {
	return []string{objSubjects(bucket), jsAPI("STREAM.PURGE." + objStream(bucket))}
}
