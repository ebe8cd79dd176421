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

// Permission is what a user may publish and subscribe to: NATS subjects,
// wildcards allowed; anything not listed is refused by the server.
type Permission struct {
	Publish   []string `json:"publish"`
	Subscribe []string `json:"subscribe"`
}

// Grant is one NATS user's row of the table: its role, its name, and the
// code-mode tools a tool server may serve.
type Grant struct {
	Role Role
	// Name is the user's name, or its nkey: the last token of the subjects
	// on which a producer asks as itself (CancelSubject, TaskSubject), so
	// the server, not the message, says who asks. Required for producers;
	// it must satisfy ValidIdentity.
	Name string
	// Tools are the code-mode tools a tool server may serve: it may answer
	// their calls and discovery and no other tool's, so another tool
	// server's credentials cannot take a share of their calls. "*" is any
	// tool. Required for tool servers, refused for other roles.
	Tools []string
}

// Roles lists every role, in a stable order.
func Roles() []Role {
	return []Role{RoleCoordinator, RoleLLMWorker, RoleSandboxWorker, RoleProducer, RoleToolServer}
}

// ValidRole reports whether r is one of Roles.
func ValidRole(r Role) bool { return slices.Contains(Roles(), r) }

// AnyTool is the Grant.Tools entry that lets a tool server serve every tool.
const AnyTool = "*"

// PermissionsOf is the permission of a user. It is the one place that says
// who may do what; every list is built from the names in names.go, and
// docs/security.md has it as a table, with the tests that show each row.
//
// Why these: a stage command is code the sandbox runs and a model call the
// operator pays for, so only the coordinator publishes them; a result
// decides what a job returns, so only workers publish results and only
// the coordinator writes job state. A worker pulls and acks its own pool's
// consumer only. Nobody but the coordinator purges or deletes: a store's
// purge and message-delete requests are in no other row (an object upload
// needs its chunk and meta subjects only). A producer asks to cancel a job
// and keeps its tasks on subjects that end with its own name, so the
// coordinator knows who asks. A tool server answers its own tools' calls
// and nothing else. Everyone may look up streams and consumers (read-only
// metadata) so that a process can bind to what the coordinator provisioned.
func PermissionsOf(g Grant) (Permission, error) {
	if err := g.check(); err != nil {
		return Permission{}, err
	}
	var p Permission
	switch g.Role {
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
		p.Publish = append(p.Publish, objSubjects(ObjectStoreOutputs))
		p.Publish = append(p.Publish, codeModeTools...)
	case RoleProducer:
		p = producer(g.Name)
	case RoleToolServer:
		// Replies to the tool requests of those who call or list tools
		// (their tool inboxes only, so not a reply to any other request
		// of theirs), and nothing else: no claim-checked bodies, no job,
		// no store.
		return Permission{Publish: []string{ToolInbox(RoleSandboxWorker), ToolInbox(RoleProducer), ToolInbox(RoleCoordinator)},
			Subscribe: append(toolServing(g.Tools), InboxPrefix(RoleToolServer)+".>")}, nil
	}
	p.Publish = append(lookups(), p.Publish...)
	// Every role but the tool server publishes and reads messages, so it
	// writes and reads claim-checked bodies; a reader checks a body
	// against its content-hash name, so a writer cannot swap one.
	p.Publish = append(p.Publish, readStream(objStream(ObjectStoreClaims))...)
	p.Publish = append(p.Publish, objSubjects(ObjectStoreClaims))
	p.Subscribe = append(p.Subscribe, InboxPrefix(g.Role)+".>")
	return p, nil
}

// check says what a grant lacks.
func (g Grant) check() error {
	switch {
	case !ValidRole(g.Role):
		return fmt.Errorf("bus: unknown role %q (want one of %v)", g.Role, Roles())
	case g.Role == RoleProducer && !ValidIdentity(g.Name):
		return fmt.Errorf("bus: producer %q: a producer's name must be 1 to 64 letters, digits, '_' or '-' "+
			"(it ends the subjects it asks on as itself)", g.Name)
	case g.Role == RoleToolServer && len(g.Tools) == 0:
		return fmt.Errorf("bus: tool server %q: name the tools it may serve (tools: [name, ...], or %q for any)", g.Name, AnyTool)
	case g.Role != RoleToolServer && len(g.Tools) > 0:
		return fmt.Errorf("bus: %s %q: only a tool server serves tools", g.Role, g.Name)
	}
	for _, t := range g.Tools {
		if t != AnyTool && !ValidIdentity(t) {
			return fmt.Errorf("bus: tool server %q: %q is not a tool name (letters, digits, '_' and '-')", g.Name, t)
		}
	}
	return nil
}

// toolServing is what a tool server subscribes to for tools: each
// tool's calls and the micro framework's requests addressed to it by
// name, plus the framework's requests to every service (PING, INFO, STATS
// without a name, which discovery by name does not use).
func toolServing(tools []string) []string {
	if slices.Contains(tools, AnyTool) {
		return []string{ToolSubjects(), ServiceSubjects()}
	}
	subs := []string{"$SRV.PING", "$SRV.INFO", "$SRV.STATS"}
	for _, t := range tools {
		subs = append(subs, ToolSubject(t), "$SRV.*."+t, "$SRV.*."+t+".*")
	}
	return subs
}

// codeModeTools are what the sandbox-workers' code-mode stages request of
// tools served as NATS micro services (internal/codemode): a tool's
// description by its service name, and its calls.
var codeModeTools = []string{ServiceInfoSubjects(), ToolSubjects()}

// worker may pull and ack its pool's stage commands, offer and publish
// results on its pool's offer and result subjects only (which only its pool's ResultStream
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
		PoolOfferSubjects(pool), // the same results, offered first (Publisher.OfferJSON)
		jsAPI("DIRECT.GET." + state), jsAPI("DIRECT.GET." + state + ".>"),
		jsAPI("STREAM.MSG.GET." + state),
		PoolStartedSubjects(pool), // stage_started notices (stagework)
		poolWorkerKeys(pool),      // its capacity beats (roster.go)
	}, Subscribe: []string{SubjectCancelledAll}}
	p.Publish = append(p.Publish, readStream(kvStream(BucketPools))...) // its pool's pause switch (pause.go)
	return p
}

// producer may submit jobs (on the jobs stream or the API subjects), ask
// as itself to cancel a job and to keep or delete its tasks, read the
// code-mode tools' descriptions (not call them), upload samples (no
// purge, no delete), read results, state, outputs, events, tasks, dead
// letters, the queues and workers, replay a dead letter through the
// coordinator, hear the results it asked for with reply_to, and pause and
// resume a pool (an operator's CLI runs as a producer).
func producer(name string) Permission {
	pub := []string{SubjectJobsSubmit, SubjectAPISubmit, SubjectAPITaskRun, SubjectAPIDLQReplay,
		CancelSubject(name), TaskSubject(TaskRegister, name), TaskSubject(TaskDelete, name),
		ServiceInfoSubjects()} // the tools' descriptions: `submit codemode tools`
	for _, s := range []string{StreamEvents, StreamDLQ, kvStream(BucketJobResults), kvStream(BucketJobState), kvStream(BucketJobIndex), kvStream(BucketTasks),
		objStream(ObjectStoreSamples), objStream(ObjectStoreOutputs), kvStream(BucketWorkers), kvStream(BucketPools)} {
		pub = append(pub, readStream(s)...)
	}
	pub = append(pub, objSubjects(ObjectStoreSamples), kvSubjects(BucketPools))
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
