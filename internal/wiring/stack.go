package wiring

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/sandbox"
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

	// Metrics attaches the parts' metrics (internal/metrics); nil: none.
	Metrics *metrics.Builder

	// Stages is the stage table; zero: messages.DefaultStages(). Register,
	// if set, puts more stage handlers on each stage worker's mux, after
	// autocoder's own. Machine is the coordinator's job kinds; nil:
	// machine.Default(). A stage of one's own is a row in Stages, a
	// registration here and a row in a kind's result table
	// (docs/adding-a-stage.md).
	Stages   messages.StageTable
	Register func(*stagework.Mux)
	Machine  *machine.Machine

	// Optional overrides, mainly for tests and benchmarks.
	LLM       llm.Client
	Backend   sandbox.Backend
	Cache     cache.Cache
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

	opts   Options
	log    *slog.Logger
	stages messages.StageTable
	// busMetrics is the bus workers' observer, shared by every worker of
	// the process (the consumer label tells them apart).
	busMetrics bus.Metrics
	// onWarmFallback counts the sandbox backends' warm runs that fell back
	// to cold ones (metrics.Builder.WarmFallbacks); nil: not counted.
	onWarmFallback func(backend string) func(reason string)
	// parts is the lifetime of the started parts, ended by Close; the ctx
	// given to Start only bounds starting.
	parts   context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errOnce sync.Once
	err     error
	closers []func() error
}

// Start connects (or starts the embedded server), provisions the streams,
// buckets and stores, and starts o.Roles in goroutines. On an error, what
// was opened so far is closed again and the error says what is wrong.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	st, err := newStack(o)
	if err != nil {
		return nil, err
	}
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

// newStack checks o and fills in its defaults; the stack it returns has
// nothing open yet but its parts' context.
func newStack(o Options) (*Stack, error) {
	for _, r := range o.Roles {
		if roleStarts[r] == nil {
			return nil, fmt.Errorf("unknown role %q", r)
		}
	}
	o.Logger = cmp.Or(o.Logger, slog.New(slog.DiscardHandler))
	if o.Stages.Len() == 0 {
		o.Stages = messages.DefaultStages()
	}
	busMetrics, err := o.Metrics.Bus()
	if err != nil {
		return nil, err
	}
	st := &Stack{opts: o, log: o.Logger, stages: o.Stages, busMetrics: busMetrics}
	st.parts, st.cancel = context.WithCancel(context.Background())
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
	"(--nats-users-file) to a users file (docs/operations.md, Running a fleet), or AUTOCODER_NATS_AUTH=none " +
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
		if st.Embedded != nil && prov.StorageLimit == 0 {
			prov.StorageLimit = st.Embedded.StorageLimit(prov.MemoryStorage) // the store bounds fit it
		}
		st.Resources, err = bus.ProvisionWhenReady(ctx, st.JS, prov, st.log)
	} else {
		st.Resources, err = st.awaitProvisioned(ctx)
	}
	if err != nil {
		return err
	}
	st.Publisher = bus.NewPublisher(st.JS, bus.PublisherConfig{Logger: st.log.With("component", "publisher")})
	st.Client = client.New(st.JS, st.Resources, st.Publisher)
	if st.Embedded != nil || natsRole(st.opts.Roles) != bus.RoleProducer {
		return nil
	}
	// A producer asks as its NATS user where the coordinator must know
	// who asks (cancellations, tasks); the other roles' clients ask on the
	// coordinator role's subjects.
	id, err := clientAuth(st.opts.Config, bus.RoleProducer).Identity()
	st.Client = st.Client.AsUser(id)
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
	c, err := OpenCache(ctx, st.opts.Config, st.log.With("component", "cache"), st.opts.Metrics)
	if err != nil {
		return nil, err
	}
	st.Cache = c
	st.closers = append(st.closers, c.Close)
	return c, nil
}

// consume handles cons's messages with h in slots goroutines until Close,
// fetching nothing while pause (nil: never) is on. The bus worker recovers
// a handler's panic; a worker that stops on an error makes Close return it.
func (st *Stack) consume(name string, cons jetstream.Consumer, h bus.Handler, slots int, pause *bus.Pause) *bus.Worker {
	wc := bus.WorkerConfig{Name: name, Concurrency: slots, Logger: st.log.With("component", name), Claims: st.Resources.Claims,
		Metrics: st.busMetrics, Pause: pause}
	w := bus.NewWorker(cons, h, wc)
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		if err := w.Run(st.parts); err != nil && !errors.Is(err, context.Canceled) {
			st.log.Error("worker stopped", "worker", name, "err", err)
			st.errOnce.Do(func() { st.err = fmt.Errorf("%s: %w", name, err) })
		}
	}()
	return w
}

// watchDeadlines runs the coordinator's stage deadlines until Close.
func (st *Stack) watchDeadlines() {
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		keepRunning(st.parts, st.log, "stage deadlines", st.Coord.WatchDeadlines)
	}()
}

// keepRunning runs fn until ctx ends, and again each time it returns
// before that, after a pause that doubles from a second to 30 s (back to a
// second after a run of a minute or more). A watch whose NATS consumer
// could not be made again ends with an error; without this, what it
// watched for (jobs whose worker died) would go unseen until a restart,
// with the process otherwise healthy.
func keepRunning(ctx context.Context, log *slog.Logger, name string, fn func(context.Context) error) {
	const first, most, long = time.Second, 30 * time.Second, time.Minute
	for wait := first; ; {
		began := time.Now()
		err := fn(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) >= long {
			wait = first
		}
		log.Error(name+" stopped; starting again", "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, most)
	}
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

// warnMonitorIgnored says so when the NATS monitoring setting has nothing
// to apply to: it is the embedded server's, and this process joins a remote one.
func (st *Stack) warnMonitorIgnored() {
	if addr := st.opts.Config.NATSMonitorListen; addr != "" {
		st.log.Warn("AUTOCODER_NATS_MONITOR_LISTEN is ignored: it serves an embedded NATS server's monitoring, "+
			"and this process joins the one at AUTOCODER_NATS_URL (start that server with -m to monitor it)", "monitor_listen", addr)
	}
}
