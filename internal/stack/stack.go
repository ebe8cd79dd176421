package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmstages"
	"github.com/autocoder/autocoder/internal/samples"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Role is a part of autocoder that a process runs on the stack's NATS.
type Role string

const (
	RoleCoordinator   Role = "coordinator"    // owns the jobs' state machines
	RoleLLMWorker     Role = "llm-worker"     // takes the model stages
	RoleSandboxWorker Role = "sandbox-worker" // takes the sandbox stages
	// RoleLocal is all three in one process: what submit --local runs.
	RoleLocal Role = "local"
)

// roleStarts is each role's start function: a role's name picks what runs.
var roleStarts = map[Role]func(*Stack, context.Context) error{
	RoleCoordinator:   (*Stack).startCoordinator,
	RoleLLMWorker:     (*Stack).startLLMWorker,
	RoleSandboxWorker: (*Stack).startSandboxWorker,
	RoleLocal:         (*Stack).startLocal,
}

// Options says which parts to run in this process and how to reach the rest.
// The same code paths run whether everything is in one process (submit
// --local) or each part is its own binary: only this wiring differs.
type Options struct {
	Config config.Config
	Logger *slog.Logger // nil: discard

	// Roles are the parts this process runs, started in this order. None:
	// only the connection and the Client, as submit's lookups and jobs sent
	// to a running deployment need.
	Roles []Role

	// EmbeddedListen lets other processes into the embedded NATS server
	// ("" = in-process connections only). The embedded server, with
	// JetStream under Config.StateDir, starts when Config.NATSURL is empty.
	EmbeddedListen string

	// ConnectTimeout bounds the first connection to a remote NATS. Zero
	// means retry until ctx is done: right for servers that may start before
	// NATS does, wrong for a CLI, which should fail with a clear error.
	ConnectTimeout time.Duration

	// Optional overrides, mainly for tests and benchmarks.
	LLM       llm.Client
	Backend   sandbox.Backend
	Cache     cache.Cache
	Registry  *prometheus.Registry
	Provision bus.ProvisionConfig
}

// Stack is a running set of autocoder parts on one NATS.
type Stack struct {
	Embedded  *bus.Embedded // nil when joining a remote NATS
	Conn      *nats.Conn
	JS        jetstream.JetStream
	Resources *bus.Resources
	Publisher *bus.Publisher
	Client    *client.Client
	Coord     *coordinator.Coordinator
	Backend   sandbox.Backend
	Cache     cache.Cache

	opts Options
	log  *slog.Logger
	// parts is the lifetime of the started parts, ended by Close; the ctx
	// given to Start only bounds starting.
	parts       context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	errOnce     sync.Once
	metricsOnce sync.Once
	metrics     bus.Metrics
	stageOnce   sync.Once
	stageHook   func(messages.Stage, bool, string, time.Duration)
	refusedOnce sync.Once
	refusedHook func(messages.Stage, string)
	err         error
	closers     []func() error
}

// Start connects (or starts the embedded server), provisions the streams,
// buckets and stores, and starts o.Roles in goroutines. On an error, what
// was opened so far is closed again and the error says what is wrong.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, r := range o.Roles {
		if roleStarts[r] == nil {
			return nil, fmt.Errorf("unknown role %q", r)
		}
	}
	// st is not the named result: every error path returns nil, and the
	// cleanup must still close what was opened so far.
	st := &Stack{opts: o, log: o.Logger}
	st.parts, st.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			st.Close()
		}
	}()
	if err := st.connect(ctx); err != nil {
		return nil, err
	}
	if err := st.provision(ctx); err != nil {
		return nil, err
	}
	for _, r := range o.Roles {
		if err := roleStarts[r](st, ctx); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// connect starts the embedded NATS server (no Config.NATSURL) or joins the
// remote one, and opens JetStream on the connection.
func (st *Stack) connect(ctx context.Context) error {
	if err := os.MkdirAll(st.opts.Config.StateDir, 0o755); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	var err error
	if st.opts.Config.NATSURL == "" {
		st.Conn, err = st.startEmbedded()
	} else {
		st.warnMonitorIgnored()
		st.Conn, err = st.joinRemote(ctx)
	}
	if err != nil {
		return err
	}
	conn := st.Conn
	st.closers = append(st.closers, func() error { conn.Close(); return nil })
	if st.JS, err = jetstream.New(conn); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// startEmbedded starts the in-process NATS server and connects to it.
func (st *Stack) startEmbedded() (*nats.Conn, error) {
	ec, err := st.embeddedConfig()
	if err != nil {
		return nil, err
	}
	emb, err := bus.StartEmbedded(ec)
	if err != nil {
		return nil, err
	}
	st.Embedded = emb
	st.closers = append(st.closers, func() error { emb.Shutdown(); return nil })
	return emb.Connect()
}

// errNoNATSAuth is a listener with neither users nor auth switched off.
const errNoNATSAuth = "the embedded NATS listener %s needs authentication: set AUTOCODER_NATS_USERS_FILE " +
	"(--nats-users-file) to a users file (see README, NATS authentication), or AUTOCODER_NATS_AUTH=none " +
	"(--nats-auth=none) to let any process that reaches it in"

// embeddedConfig is the embedded server: its store, and the listener with
// the users file's users (or, said so explicitly, no authentication).
func (st *Stack) embeddedConfig() (bus.EmbeddedConfig, error) {
	cfg := st.opts.Config
	ec := bus.EmbeddedConfig{StoreDir: EmbeddedStoreDir(cfg), Listen: st.opts.EmbeddedListen,
		Logger: st.log.With("component", "nats"), TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey,
		MonitorListen: cfg.NATSMonitorListen, Sync: cfg.NATSSync}
	switch {
	case ec.Listen == "":
	case cfg.NATSAuth == config.NATSAuthNone:
		ec.NoAuth = true
		st.log.Warn("embedded NATS listener without authentication (AUTOCODER_NATS_AUTH=none): "+
			"any process that reaches it can run code and spend the model budget", "listen", ec.Listen)
	case cfg.NATSUsersFile == "":
		return ec, fmt.Errorf(errNoNATSAuth, ec.Listen)
	default:
		users, err := bus.LoadUsers(cfg.NATSUsersFile)
		if err != nil {
			return ec, err
		}
		ec.Users = users
	}
	return ec, nil
}

// joinRemote connects to Config.NATSURL with the configured credentials:
// within ConnectTimeout (the CLI), or retrying until ctx ends (the servers).
func (st *Stack) joinRemote(ctx context.Context) (*nats.Conn, error) {
	cfg := st.opts.Config
	opts, err := clientAuth(cfg, natsRole(st.opts.Roles)).Options()
	if err != nil {
		return nil, err
	}
	ctx, cancel := st.withConnectTimeout(ctx)
	defer cancel()
	return bus.Connect(ctx, cfg.NATSURL, "autocoder-"+cfg.WorkerName, st.log, opts...)
}

// withConnectTimeout bounds ctx by Options.ConnectTimeout, when set.
func (st *Stack) withConnectTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if d := st.opts.ConnectTimeout; d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return ctx, func() {}
}

// clientAuth is the NATS credentials and TLS of the configuration.
func clientAuth(cfg config.Config, role bus.Role) bus.ClientAuth {
	return bus.ClientAuth{User: cfg.NATSUser, Password: cfg.NATSPassword, PasswordFile: cfg.NATSPasswordFile,
		NKeyFile: cfg.NATSNKeyFile, CredsFile: cfg.NATSCredsFile,
		CAFile: cfg.NATSCAFile, CertFile: cfg.NATSCertFile, KeyFile: cfg.NATSKeyFile, Role: role}
}

// natsRoles is the NATS role (the permissions) a process needs to run one
// role of the stack.
var natsRoles = map[Role]bus.Role{
	RoleCoordinator:   bus.RoleCoordinator,
	RoleLLMWorker:     bus.RoleLLMWorker,
	RoleSandboxWorker: bus.RoleSandboxWorker,
	RoleLocal:         bus.RoleCoordinator,
}

// natsRole is the NATS role of a process running roles: no role is a
// producer (the CLI), several need everything.
func natsRole(roles []Role) bus.Role {
	switch len(roles) {
	case 0:
		return bus.RoleProducer
	case 1:
		return natsRoles[roles[0]]
	}
	return bus.RoleCoordinator
}

// provision creates (or updates) the streams, consumers, KV buckets and
// object stores when this process owns them (it hosts NATS, or runs the
// coordinator); else it binds to what the coordinator made, waiting for
// it. Then it makes the Publisher and Client on them.
func (st *Stack) provision(ctx context.Context) (err error) {
	if st.Embedded != nil || natsRole(st.opts.Roles) == bus.RoleCoordinator {
		prov, perr := st.opts.Config.Provision(st.opts.Provision)
		if perr != nil {
			return perr
		}
		prov.Logger = st.log.With("component", "provision")
		st.Resources, err = bus.ProvisionWhenReady(ctx, st.JS, prov, st.log)
	} else {
		st.Resources, err = st.awaitProvisioned(ctx)
	}
	if err != nil {
		return err
	}
	st.Publisher = bus.NewPublisher(st.JS, bus.PublisherConfig{Logger: st.log.With("component", "publisher")})
	st.Client, err = client.New(st.JS, st.Resources, st.Publisher, filepath.Join(st.opts.Config.StateDir, "samples"))
	if err != nil || st.Embedded != nil || natsRole(st.opts.Roles) != bus.RoleProducer {
		return err
	}
	// A producer asks as its NATS user where the coordinator must know
	// who asks (cancellations, tasks); the other roles' clients ask on the
	// coordinator role's subjects.
	id, err := clientAuth(st.opts.Config, bus.RoleProducer).Identity()
	st.Client.SetIdentity(id)
	return err
}

// awaitProvisioned opens what the coordinator provisioned, retrying until
// it exists (workers may start before the coordinator does), ctx ends or
// ConnectTimeout passes (the CLI).
func (st *Stack) awaitProvisioned(ctx context.Context) (*bus.Resources, error) {
	ctx, cancel := st.withConnectTimeout(ctx)
	defer cancel()
	return bus.OpenWhenReady(ctx, st.JS, st.log)
}

// workerCache is the cache the workers share: Options.Cache, or the one the
// configuration names, opened by the first worker that needs it (a
// coordinator or a bare client needs none).
func (st *Stack) workerCache(ctx context.Context) (cache.Cache, error) {
	if st.Cache != nil {
		return st.Cache, nil
	}
	if st.opts.Cache != nil {
		st.Cache = st.opts.Cache
		return st.Cache, nil
	}
	c, err := OpenCache(ctx, st.opts.Config, st.log.With("component", "cache"), st.opts.Registry)
	if err != nil {
		return nil, err
	}
	st.Cache = c
	st.closers = append(st.closers, c.Close)
	return c, nil
}

// startCoordinator re-publishes the stored jobs' outboxes and takes
// submissions and stage results, each pool's from its own stream.
func (st *Stack) startCoordinator(ctx context.Context) error {
	var m *coordinator.Metrics
	if st.opts.Registry != nil {
		m = coordinator.NewMetrics(st.opts.Registry)
	}
	deadlines, err := st.opts.Config.Deadlines()
	if err != nil {
		return err
	}
	coord, err := coordinator.New(coordinator.Config{States: st.Resources.JobState, Results: st.Resources.JobResults, Index: st.Resources.JobIndex,
		Publisher: st.Publisher, Logger: st.log.With("component", "coordinator"), Metrics: m, DefaultModel: st.opts.Config.Model,
		StageDeadlines: deadlines, Resources: st.Resources, JS: st.JS})
	if err != nil {
		return err
	}
	st.Coord = coord
	if err := st.registerQueues(); err != nil {
		return err
	}
	st.watchDeadlines()
	if err := st.serveAPI(ctx); err != nil {
		return err
	}
	if err := coord.Recover(ctx); err != nil {
		st.log.Warn("recover outboxes", "err", err)
	}
	if err := coord.BackfillIndex(ctx); err != nil {
		st.log.Warn("backfill the job index", "err", err)
	}
	st.consume("coordinator-jobs", st.Resources.JobsConsumer, bus.HandlerFunc(coord.HandleJobs), 4)
	for _, pool := range bus.Pools() {
		st.consume("coordinator-results-"+string(pool), st.Resources.ResultConsumers[pool], bus.HandlerFunc(coord.HandleResult), 8)
	}
	return nil
}

// startLLMWorker takes the model stages, calling Options.LLM or the
// configured OpenAI-compatible endpoint.
func (st *Stack) startLLMWorker(ctx context.Context) error {
	c, err := st.workerCache(ctx)
	if err != nil {
		return err
	}
	bounds, err := st.opts.Config.Bounds()
	if err != nil {
		return err
	}
	model := st.opts.LLM
	if model == nil {
		cfg := st.opts.Config
		obs, err := st.modelObserver()
		if err != nil {
			return err
		}
		model, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey,
			MaxReplyBytes: bounds.ReplyBytes, Logger: st.log.With("component", "llm"), Observer: obs})
		if err != nil {
			return err
		}
	}
	docs, err := samples.New(st.Resources.Samples, filepath.Join(st.opts.Config.StateDir, "context"))
	if err != nil {
		return err
	}
	h := llmstages.NewStageHandler(llmstages.New(model, llmstages.Options{MaxPromptBytes: bounds.PromptBytes,
		Logger: st.log.With("component", "llm-stages"), Context: docs, ContextBytes: bounds.ContextBytes,
		FailedRuns: cache.FailedRuns{Cache: c}}))
	chat, _ := model.(codemode.Model) // nil: code-mode turns fail, saying why
	return st.startStageWorker(bus.PoolLLM, codemodestages.Wrap(h, codemodestages.Turn{Model: chat}), c, 4)
}

// startSandboxWorker takes the sandbox stages on Options.Backend or the
// configured one (OpenBackend).
func (st *Stack) startSandboxWorker(ctx context.Context) error {
	c, err := st.workerCache(ctx)
	if err != nil {
		return err
	}
	if st.Backend = st.opts.Backend; st.Backend == nil {
		b, err := OpenBackend(ctx, st.opts.Config, st.log, c)
		if err != nil {
			return err
		}
		st.Backend = b
		st.closers = append(st.closers, b.Close)
	}
	store, err := samples.New(st.Resources.Samples, filepath.Join(st.opts.Config.StateDir, "samples"))
	if err != nil {
		return err
	}
	rc, err := st.opts.Config.Ceilings()
	if err != nil {
		return err
	}
	ceil := sandboxstages.Ceilings{Timeout: rc.Timeout, Memory: rc.Memory, CPUs: rc.CPUs,
		Outputs: sandbox.OutputCaps{MaxFiles: rc.OutputFiles, MaxBytes: rc.OutputBytes}}
	backend, err := st.observedBackend()
	if err != nil {
		return err
	}
	h := sandboxstages.New(backend, store).WithOutputs(sandboxstages.ObjectStoreOutputs{Obj: st.Resources.Outputs}).
		WithWorkspace(sandboxstages.ObjectStoreWorkspace{Obj: st.Resources.Outputs}).
		WithCeilings(ceil).WithLogger(st.log.With("component", "sandbox-stages")).WithFailedRuns(cache.FailedRuns{Cache: c})
	cm := &codemodestages.Exec{Conn: st.Conn, Cache: c} // code-mode programs, tools over NATS
	return st.startStageWorker(bus.PoolSandbox, codemodestages.Wrap(h, cm), c, 2)
}

// startLocal starts the coordinator and both workers, as submit --local does.
func (st *Stack) startLocal(ctx context.Context) error {
	for _, start := range []func(*Stack, context.Context) error{(*Stack).startCoordinator, (*Stack).startLLMWorker, (*Stack).startSandboxWorker} {
		if err := start(st, ctx); err != nil {
			return err
		}
	}
	return nil
}

// startStageWorker starts the <pool>-worker: pool's stage commands handled
// by h, cached in c, in Config.Concurrency slots (defaultSlots when unset).
func (st *Stack) startStageWorker(pool bus.Pool, h stagework.Handler, c cache.Cache, defaultSlots int) error {
	cfg, name := st.opts.Config, string(pool)+"-worker"
	c, err := st.observedCache(c)
	if err != nil {
		return err
	}
	cancels := stagework.NewCancels() // a cancelled job's stages stop
	sub, err := cancels.Listen(st.Conn)
	if err != nil {
		return fmt.Errorf("%s: subscribe to cancellations: %w", name, err)
	}
	st.closers = append(st.closers, sub.Unsubscribe)
	r, err := stagework.NewExecutor(stagework.Config{Handler: h, Publisher: st.Publisher, Cache: c,
		Pool: pool, Jobs: stagework.KVJobs{KV: st.Resources.JobState}, Cancels: cancels,
		Logger: st.log.With("component", name), Worker: cfg.WorkerName, OnResult: st.stageMetrics(), OnRefused: st.refusalMetrics()})
	if err != nil {
		return err
	}
	st.consume(name, st.Resources.StageConsumers[pool], r, concurrency(cfg.Concurrency, defaultSlots))
	return nil
}

func concurrency(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// consume handles cons's messages with h in slots goroutines until Close.
// The bus worker recovers a handler's panic; a worker that stops on an
// error makes Close return it.
func (st *Stack) consume(name string, cons jetstream.Consumer, h bus.Handler, slots int) {
	wc := bus.WorkerConfig{Name: name, Concurrency: slots, Logger: st.log.With("component", name), Claims: st.Resources.Claims}
	if st.opts.Registry != nil {
		wc.Metrics = st.busMetrics()
	}
	w := bus.NewWorker(cons, h, wc)
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		if err := w.Run(st.parts); err != nil && !errors.Is(err, context.Canceled) {
			st.log.Error("worker stopped", "worker", name, "err", err)
			st.errOnce.Do(func() { st.err = fmt.Errorf("%s: %w", name, err) })
		}
	}()
}

// watchDeadlines runs the coordinator's stage deadlines until Close.
func (st *Stack) watchDeadlines() {
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		if err := st.Coord.WatchDeadlines(st.parts); err != nil && !errors.Is(err, context.Canceled) {
			st.log.Error("stage deadlines stopped", "err", err)
		}
	}()
}

// serveAPI answers the message API and takes the max-deliveries advisories
// (coordinator.ServeAPI) until Close; it returns once they are subscribed.
func (st *Stack) serveAPI(ctx context.Context) error {
	ready := make(chan error, 1)
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		err := st.Coord.ServeAPI(st.parts, func() { ready <- nil })
		if err != nil {
			ready <- err
			st.log.Error("message API stopped", "err", err)
		}
	}()
	select {
	case err := <-ready:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the parts (in-flight work is left for redelivery), then the
// connection and the embedded server.
func (st *Stack) Close() error {
	if st.cancel != nil {
		st.cancel()
	}
	st.wg.Wait()
	for i := len(st.closers) - 1; i >= 0; i-- {
		_ = st.closers[i]()
	}
	st.closers = nil
	return st.err
}

// OpenBackend opens the sandbox backend the configuration asks for
// (Contract 6 (docs/contracts.md)): AUTOCODER_SANDBOX=docker or process; unset, docker when an
// engine answers at DOCKER_HOST within a second, else process. c (may be
// nil) holds the docker backend's cross-worker build lock.
func OpenBackend(ctx context.Context, cfg config.Config, log *slog.Logger, c cache.Cache) (sandbox.Backend, error) {
	log = log.With("component", "sandbox")
	switch cfg.Sandbox {
	case "process":
		return openProcess(cfg, log)
	case "docker":
		return openDocker(ctx, cfg, log, c)
	case "":
	default:
		return nil, fmt.Errorf("sandbox backend %q is not docker or process", cfg.Sandbox)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	pingErr := docker.Ping(pctx, cfg.DockerHost)
	cancel()
	if pingErr == nil {
		b, err := openDocker(ctx, cfg, log, c)
		if err == nil {
			return b, nil
		}
		log.Warn("a Docker engine answers but the docker sandbox cannot start; using the process sandbox", "err", err)
		pingErr = err
	}
	b, err := openProcess(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("no sandbox backend can run here: docker: %v; process: %w "+
			"(start Docker or podman system service and set DOCKER_HOST, or install bubblewrap; see docs/docker.md)", pingErr, err)
	}
	log.Info("sandbox backend: process", "docker", pingErr.Error())
	return b, nil
}

func openProcess(cfg config.Config, log *slog.Logger) (sandbox.Backend, error) {
	b, err := bwrap.New(bwrap.Config{Python: cfg.Python, StateDir: cfg.StateDir,
		PipIndexURL: cfg.PipIndexURL, PipFindLinks: cfg.FindLinks(), Logger: log})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return b, nil
}

func openDocker(ctx context.Context, cfg config.Config, log *slog.Logger, c cache.Cache) (sandbox.Backend, error) {
	b, err := docker.New(ctx, docker.Config{Host: cfg.DockerHost, BaseImage: cfg.DockerBaseImage, Runtime: cfg.DockerRuntime,
		Worker: cfg.WorkerName, Cache: c, PipIndexURL: cfg.PipIndexURL, PipFindLinks: cfg.FindLinks(),
		PoolSize: cfg.DockerPoolSize, ExtraCommands: cfg.DockerExtra(), BuildNetwork: cfg.DockerBuildNetwork, Logger: log})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// busMetrics returns the workers' shared Prometheus adapter, registering it once.
func (st *Stack) busMetrics() bus.Metrics {
	st.metricsOnce.Do(func() {
		m, err := bus.NewPrometheusMetrics(st.opts.Registry)
		if err != nil {
			st.log.Warn("bus metrics", "err", err)
			return
		}
		st.metrics = m
	})
	return st.metrics
}

// refusalMetrics returns the shared refused-command hook, registering it once; nil without a registry.
func (st *Stack) refusalMetrics() func(messages.Stage, string) {
	if st.opts.Registry == nil {
		return nil
	}
	st.refusedOnce.Do(func() {
		h, err := stagework.NewRefusalMetrics(st.opts.Registry)
		if err != nil {
			st.log.Warn("refusal metrics", "err", err)
			return
		}
		st.refusedHook = h
	})
	return st.refusedHook
}

// stageMetrics returns the shared stage-metrics hook, registering it once; nil without a registry.
func (st *Stack) stageMetrics() func(messages.Stage, bool, string, time.Duration) {
	if st.opts.Registry == nil {
		return nil
	}
	st.stageOnce.Do(func() {
		h, err := stagework.NewMetrics(st.opts.Registry)
		if err != nil {
			st.log.Warn("stage metrics", "err", err)
			return
		}
		st.stageHook = h
	})
	return st.stageHook
}
