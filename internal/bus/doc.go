// Package bus is the NATS JetStream plumbing every autocoder process uses:
// the names of every stream, subject, consumer, bucket and object store
// (names.go), an embedded NATS server for the single-machine default,
// idempotent provisioning, a publisher with de-duplication and retries, and
// Worker, the consumer runtime that coordinators and workers run handlers in.
//
// Topology (see names.go):
//
//	autocoder.jobs.submit               AUTOCODER_JOBS          work queue  -> coordinator
//	autocoder.stage.<pool>.<stage>      AUTOCODER_STAGE_<POOL>  work queue  -> <pool>-workers
//	autocoder.results.<pool>.<job_id>   AUTOCODER_RESULTS_<POOL> work queue -> coordinator
//	autocoder.events.<job_id>           AUTOCODER_EVENTS        limits, 24h -> live views
//	KV autocoder_job_state, autocoder_job_results, autocoder_job_index; objects autocoder_samples, autocoder_outputs
//
// A handler decides a message's fate by its error: nil acks it, Permanent(err)
// terminates it, RetryAfter(err, d) redelivers it after d, and any other
// error redelivers it with exponential backoff until MaxDeliver. A Worker
// pulls only as many messages as it has free slots, heartbeats running
// handlers, recovers panics, and shuts down in two phases. Stage commands
// are handled by the stage executor (internal/stagework), whose failure
// policy turns every failure of a command with a job into a published
// result: it returns Permanent only for a command it cannot read.
//
// Embedded, in one process:
//
//	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: dir, Logger: logger})
//	if err != nil { ... }
//	defer srv.Shutdown()
//	nc, err := srv.Connect()
//	if err != nil { ... }
//	defer nc.Close()
//	js, err := jetstream.New(nc)
//	res, err := bus.Provision(ctx, js, bus.ProvisionConfig{})
//
// Provision (stores.go) raises replicas and never lowers them, and bounds
// every object store (an upload past a bound is a *StoreFullError), with
// bounds that are not set fitted to the server's JetStream storage
// (storefit.go);
// ProvisionWhenReady and OpenWhenReady (ready.go) wait for a JetStream that
// is still starting. The embedded server flushes every write before
// acknowledging it (sync.go).
//
//	pub := bus.NewPublisher(js, bus.PublisherConfig{Logger: logger})
//	cmd := messages.StageCommand{V: messages.WireVersion, JobID: id, Seq: 3, Stage: messages.StagePlan}
//	err = pub.PublishJSON(ctx, bus.StageSubject(messages.PoolLLM, cmd.Stage), cmd, bus.StageMsgID(id, 3))
//
//	h := bus.HandlerFunc(func(ctx context.Context, m *bus.Message) error {
//		var cmd messages.StageCommand
//		if err := m.DecodeJSON(&cmd); err != nil {
//			return bus.Permanent(err) // retrying cannot fix a malformed message
//		}
//		return runStage(ctx, cmd)
//	})
//	w := bus.NewWorker(res.StageConsumers[messages.PoolLLM], h, bus.WorkerConfig{Concurrency: 4, Logger: logger})
//	err = w.Run(ctx) // until ctx is cancelled; a handler's panic is logged and retried
//
// Metrics: WorkerConfig.Metrics takes any Metrics; internal/metrics
// (Builder.Bus) has the Prometheus one: autocoder_bus_messages_total,
// autocoder_bus_handle_seconds and autocoder_bus_in_flight.
//
// Distributed: bus.Connect(ctx, url, "llm-worker", logger) instead of the
// embedded server, and bus.Open instead of Provision in processes that do not
// own the configuration.
//
// Authentication (permissions.go, users.go, clientauth.go): every NATS user
// has a Role (and a name, and a tool server its tools: a Grant), and
// PermissionsOf(grant) is the one table of what it may publish and
// subscribe to, built from names.go: only the coordinator publishes stage
// commands, writes job state and purges stores, a worker pulls only its own
// pool's consumer and publishes results, a producer submits and reads and
// asks as itself (CancelSubject, TaskSubject), a tool server answers its
// own tools only. An
// embedded server with a listener requires Users (LoadUsers reads them from
// a users file) unless NoAuth says otherwise; its in-process connections
// need nothing. ServerConf renders the same table for a standalone
// nats-server (deploy/compose/nats.conf). A client sends its credentials
// and TLS with ClientAuth:
//
//	opts, err := bus.ClientAuth{User: "llm-1", PasswordFile: f, Role: bus.RoleLLMWorker}.Options()
//	nc, err := bus.Connect(ctx, url, "llm-worker", logger, opts...)
package bus
