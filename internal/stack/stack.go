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

// Options says which parts to run in this process and how to reach the rest.
// The same code paths run whether everything is in one process (submit
// --local) or each part is its own binary: only this wiring differs.
type Options struct {
	Config config.Config
	Logger *slog.Logger // nil: discard

	// Embedded starts an in-process NATS server with JetStream under
	// Config.StateDir when Config.NATSURL is empty. EmbeddedListen lets other
	// processes in ("" = in-process connections only).
	EmbeddedListen string

	Coordinator   bool // run a coordinator
	LLMWorker     bool // run an llm-worker
	SandboxWorker bool // run a sandbox-worker

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

	log         *slog.Logger
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	errOnce     sync.Once
	metricsOnce sync.Once
	metrics     bus.Metrics
	stageOnce   sync.Once
	stageHook   func(messages.Stage, bool, string, time.Duration)
	err         error
	closers     []func() error
}

// Start connects (or starts the embedded server), provisions the streams,
// buckets and stores, and starts the requested parts in goroutines.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := o.Config
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	// st is not the named result: every error path returns nil, and the
	// cleanup must still close what was opened so far.
	st := &Stack{log: log}
	defer func() {
		if err != nil {
			st.Close()
		}
	}()

	if cfg.NATSURL == "" {
		emb, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: filepath.Join(cfg.StateDir, "jetstream"), Listen: o.EmbeddedListen, Logger: log.With("component", "nats")})
		if err != nil {
			return nil, err
		}
		st.Embedded = emb
		st.closers = append(st.closers, func() error { emb.Shutdown(); return nil })
		st.Conn, err = emb.Connect()
		if err != nil {
			return nil, err
		}
	} else {
		connectCtx := ctx
		if o.ConnectTimeout > 0 {
			var cancel context.CancelFunc
			connectCtx, cancel = context.WithTimeout(ctx, o.ConnectTimeout)
			defer cancel()
		}
		st.Conn, err = bus.Connect(connectCtx, cfg.NATSURL, "autocoder-"+cfg.WorkerName, log)
		if err != nil {
			return nil, err
		}
	}
	conn := st.Conn
	st.closers = append(st.closers, func() error { conn.Close(); return nil })
	st.JS, err = jetstream.New(st.Conn)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	st.Resources, err = bus.Provision(ctx, st.JS, o.Provision)
	if err != nil {
		return nil, err
	}
	st.Publisher = bus.NewPublisher(st.JS, bus.PublisherConfig{Logger: log.With("component", "publisher")})
	st.Client, err = client.New(st.JS, st.Resources, st.Publisher, filepath.Join(cfg.StateDir, "samples"))
	if err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	st.cancel = cancel

	if o.Coordinator {
		var m *coordinator.Metrics
		if o.Registry != nil {
			m = coordinator.NewMetrics(o.Registry)
		}
		st.Coord, err = coordinator.New(coordinator.Config{States: st.Resources.JobState, Results: st.Resources.JobResults,
			Publisher: st.Publisher, Logger: log.With("component", "coordinator"), Metrics: m, DefaultModel: cfg.Model})
		if err != nil {
			return nil, err
		}
		if err := st.Coord.Recover(ctx); err != nil {
			log.Warn("recover outboxes", "err", err)
		}
		st.run(runCtx, "coordinator-jobs", st.Resources.JobsConsumer, bus.HandlerFunc(st.Coord.HandleSubmit), 4, o.Registry)
		st.run(runCtx, "coordinator-results", st.Resources.ResultsConsumer, bus.HandlerFunc(st.Coord.HandleResult), 8, o.Registry)
	}

	if o.LLMWorker || o.SandboxWorker {
		st.Cache = o.Cache
		if st.Cache == nil {
			st.Cache, err = OpenCache(ctx, cfg)
			if err != nil {
				return nil, err
			}
			c := st.Cache
			st.closers = append(st.closers, c.Close)
		}
	}

	if o.LLMWorker {
		client := o.LLM
		if client == nil {
			client, err = llm.NewOpenAI(llm.OpenAIConfig{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Logger: log.With("component", "llm")})
			if err != nil {
				return nil, err
			}
		}
		h := llmHandler{h: llmstages.New(client, llmstages.Options{Logger: log.With("component", "llm-stages")})}
		r, err := stagework.NewRunner(stagework.Config{Handler: h, Publisher: st.Publisher, Cache: st.Cache,
			Logger: log.With("component", "llm-worker"), Worker: cfg.WorkerName, OnResult: st.stageMetrics(o.Registry)})
		if err != nil {
			return nil, err
		}
		st.run(runCtx, "llm-worker", st.Resources.StageConsumers[messages.PoolLLM], r, concurrency(cfg.Concurrency, 4), o.Registry)
	}

	if o.SandboxWorker {
		st.Backend = o.Backend
		if st.Backend == nil {
			st.Backend, err = OpenBackend(ctx, cfg, log, st.Cache)
			if err != nil {
				return nil, err
			}
			b := st.Backend
			st.closers = append(st.closers, b.Close)
		}
		store, err := samples.New(st.Resources.Samples, filepath.Join(cfg.StateDir, "samples"))
		if err != nil {
			return nil, err
		}
		r, err := stagework.NewRunner(stagework.Config{Handler: sandboxstages.New(st.Backend, store).WithOutputs(sandboxstages.ObjectStoreOutputs{Obj: st.Resources.Outputs}), Publisher: st.Publisher,
			Cache: st.Cache, Logger: log.With("component", "sandbox-worker"), Worker: cfg.WorkerName, OnResult: st.stageMetrics(o.Registry)})
		if err != nil {
			return nil, err
		}
		st.run(runCtx, "sandbox-worker", st.Resources.StageConsumers[messages.PoolSandbox], r, concurrency(cfg.Concurrency, 2), o.Registry)
	}
	return st, nil
}

func concurrency(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func (st *Stack) run(ctx context.Context, name string, cons jetstream.Consumer, h bus.Handler, slots int, reg *prometheus.Registry) {
	wlog := st.log.With("component", name)
	wc := bus.WorkerConfig{Name: name, Concurrency: slots, Logger: wlog}
	if reg != nil {
		wc.Metrics = st.busMetrics(reg)
	}
	w := bus.NewWorker(cons, bus.Chain(h, bus.Recover(wlog)), wc)
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			st.log.Error("worker stopped", "worker", name, "err", err)
			st.errOnce.Do(func() { st.err = fmt.Errorf("%s: %w", name, err) })
		}
	}()
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

// OpenCache opens the Redis cache when AUTOCODER_REDIS_URL is set, else the
// embedded cache under the state dir.
func OpenCache(ctx context.Context, cfg config.Config) (cache.Cache, error) {
	if cfg.RedisURL != "" {
		return cache.OpenRedis(ctx, cfg.RedisURL)
	}
	return cache.OpenDir(filepath.Join(cfg.StateDir, "cache"))
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
		PoolSize: cfg.DockerPoolSize, ExtraCommands: cfg.DockerExtra(), Logger: log})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// llmHandler adapts llmstages to stagework.
type llmHandler struct{ h *llmstages.Handlers }

func (l llmHandler) Version(stage messages.Stage) string { return llmstages.StageVersion(stage) }

func (l llmHandler) Handle(ctx context.Context, cmd *messages.StageCommand) (stagework.Output, error) {
	out, err := l.h.Handle(ctx, cmd)
	if err != nil {
		var ce *llm.CallError
		paid := stagework.Output{Usage: out.Usage}
		if errors.Is(err, llmstages.ErrBadInput) || errors.Is(err, llm.ErrInvalidReply) || (errors.As(err, &ce) && !ce.Temporary()) {
			return paid, stagework.Permanent(err)
		}
		if ce != nil && ce.RetryAfter > 0 {
			return paid, bus.RetryAfter(err, ce.RetryAfter) // the server said when; don't hold a slot
		}
		return paid, err
	}
	return stagework.Output{Value: out.Value, Usage: out.Usage, Messages: out.Messages}, nil
}

// busMetrics returns the workers' shared Prometheus adapter, registering it once.
func (st *Stack) busMetrics(reg *prometheus.Registry) bus.Metrics {
	st.metricsOnce.Do(func() {
		m, err := bus.NewPrometheusMetrics(reg)
		if err != nil {
			st.log.Warn("bus metrics", "err", err)
			return
		}
		st.metrics = m
	})
	return st.metrics
}

// stageMetrics returns the shared stage-metrics hook, registering it once; nil without a registry.
func (st *Stack) stageMetrics(reg *prometheus.Registry) func(messages.Stage, bool, string, time.Duration) {
	if reg == nil {
		return nil
	}
	st.stageOnce.Do(func() {
		h, err := stagework.NewMetrics(reg)
		if err != nil {
			st.log.Warn("stage metrics", "err", err)
			return
		}
		st.stageHook = h
	})
	return st.stageHook
}
