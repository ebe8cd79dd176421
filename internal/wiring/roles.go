package wiring

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmstages"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/objects"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// startCoordinator re-publishes the stored jobs' outboxes and takes
// submissions and stage results, each pool's from its own stream.
func (st *Stack) startCoordinator(ctx context.Context) error {
	m, err := st.opts.Metrics.Coordinator(st.Resources)
	if err != nil {
		return err
	}
	deadlines, err := st.opts.Config.Deadlines(st.stages)
	if err != nil {
		return err
	}
	models, defaultModel, err := st.opts.Config.ModelNames()
	if err != nil {
		return err
	}
	offered := coordinator.Offered{Models: models, Pythons: st.opts.Config.PythonVersions()}
	coord, err := coordinator.New(coordinator.Config{States: st.Resources.JobState, Results: st.Resources.JobResults, Index: st.Resources.JobIndex,
		Publisher: st.Publisher, Logger: st.log.With("component", "coordinator"), Metrics: m, DefaultModel: defaultModel,
		Stages: st.stages, StageDeadlines: deadlines, Machine: st.opts.Machine, Resources: st.Resources, JS: st.JS, Offered: offered})
	if err != nil {
		return err
	}
	st.Coord = coord
	st.closers = append(st.closers, coord.Close) // after the connection's closer: runs before it
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
	st.consume("coordinator-jobs", st.Resources.JobsConsumer, bus.HandlerFunc(coord.HandleJobs), 4, nil)
	for _, pool := range messages.Pools() {
		st.consume("coordinator-results-"+string(pool), st.Resources.ResultConsumers[pool], bus.HandlerFunc(coord.HandleResult), 8, nil)
		// The results workers offer (coordinator/offer.go): one
		// coordinator of the queue group hears each, and answers.
		sub, err := st.Conn.QueueSubscribe(bus.PoolOfferSubjects(pool), bus.QueueResultOffers, func(m *nats.Msg) {
			coord.HandleOffer(st.parts, bus.NewMessage(m.Subject, m.Data, m.Header, 1), func(taken bool) {
				answer := []byte(nil)
				if taken {
					answer = []byte(bus.OfferTaken)
				}
				if err := m.Respond(answer); err != nil {
					st.log.Debug("answer a result offer", "subject", m.Subject, "err", err) // the worker publishes it
				}
			})
		})
		if err != nil {
			return fmt.Errorf("coordinator: subscribe to %s result offers: %w", pool, err)
		}
		st.closers = append(st.closers, sub.Unsubscribe)
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
	model, err := st.model()
	if err != nil {
		return err
	}
	bounds, err := st.opts.Config.Bounds()
	if err != nil {
		return err
	}
	docs, err := objects.New(st.Resources.Samples, filepath.Join(st.opts.Config.StateDir, "context"))
	if err != nil {
		return err
	}
	llmStages, err := llmstages.New(llmstages.Config{Client: model, MaxPromptBytes: bounds.PromptBytes,
		Logger: st.log.With("component", "llm-stages"), Context: docs, ContextBytes: bounds.ContextBytes,
		FailedRuns: cache.FailedRuns{Cache: c, TTL: st.opts.Config.CacheTTL}})
	if err != nil {
		return err
	}
	chat, _ := model.(codemode.Model) // nil: code-mode turns fail, saying why
	codeMode, err := codemodestages.New(codemodestages.Config{Model: chat})
	if err != nil {
		return err
	}
	return st.startStageWorker(messages.PoolLLM, c, 4, llmStages.Register, codeMode.Register)
}

// model is Options.LLM, or the llm-worker's router over the model table
// (AUTOCODER_MODELS_FILE, or the one model of OPENAI_BASE_URL): a client
// per model, each call priced and its cost counted.
func (st *Stack) model() (llm.Client, error) {
	if st.opts.LLM != nil {
		return st.opts.LLM, nil
	}
	cfg := st.opts.Config
	bounds, err := cfg.Bounds()
	if err != nil {
		return nil, err
	}
	table, err := cfg.ModelTable()
	if err != nil {
		return nil, err
	}
	obs, err := st.opts.Metrics.Model()
	if err != nil {
		return nil, err
	}
	var onUsage func(string, string, messages.Usage)
	if m, ok := obs.(interface{ Cost(string, string, float64) }); ok {
		onUsage = func(model, stage string, u messages.Usage) { m.Cost(model, stage, u.Cost) }
	}
	return llm.NewRouter(table, llm.OpenAIConfig{MaxReplyBytes: bounds.ReplyBytes, Logger: st.log.With("component", "llm"), Observer: obs}, onUsage)
}

// startSandboxWorker takes the sandbox stages on Options.Backend or the
// configured one (OpenBackend).
func (st *Stack) startSandboxWorker(ctx context.Context) error {
	c, err := st.workerCache(ctx)
	if err != nil {
		return err
	}
	onWarmFallback, err := st.opts.Metrics.WarmFallbacks()
	if err != nil {
		return err
	}
	st.onWarmFallback = onWarmFallback
	if st.Backend = st.opts.Backend; st.Backend == nil {
		b, err := OpenBackend(ctx, st.opts.Config, st.log, c, onWarmFallback)
		if err != nil {
			return err
		}
		st.Backend = b
		st.closers = append(st.closers, b.Close)
	}
	store, err := objects.New(st.Resources.Samples, filepath.Join(st.opts.Config.StateDir, "samples"))
	if err != nil {
		return err
	}
	rc, err := st.opts.Config.Ceilings()
	if err != nil {
		return err
	}
	backend, err := st.opts.Metrics.Backend(st.Backend) // st.Backend stays the backend itself
	if err != nil {
		return err
	}
	secrets, err := st.secretSource() // pythons.go
	if err != nil {
		return err
	}
	python, others, err := st.pythonBackends(ctx, c) // pythons.go
	if err != nil {
		return err
	}
	sandboxStages, err := sandboxstages.New(sandboxstages.Config{Backend: backend, Samples: store,
		Outputs:    sandboxstages.ObjectStoreOutputs{Obj: st.Resources.Outputs},
		Workspace:  sandboxstages.ObjectStoreWorkspace{Obj: st.Resources.Outputs},
		FailedRuns: cache.FailedRuns{Cache: c, TTL: st.opts.Config.CacheTTL}, Logger: st.log.With("component", "sandbox-stages"),
		Ceilings: sandboxstages.Ceilings{Timeout: rc.Timeout, Memory: rc.Memory, CPUs: rc.CPUs,
			Outputs: sandbox.OutputCaps{MaxFiles: rc.OutputFiles, MaxBytes: rc.OutputBytes}},
		Secrets: secrets, Python: python, PythonBackends: others})
	if err != nil {
		return err
	}
	// Code-mode programs: CPython in the sandbox (or Starlark here), with
	// their tools over NATS and their files in the outputs store.
	codeMode, err := codemodestages.New(codemodestages.Config{Conn: st.Conn, Cache: c, CacheTTL: st.opts.Config.CacheTTL,
		Python: &pyexec.Runner{Backend: backend}, Files: sandboxstages.ObjectStoreOutputs{Obj: st.Resources.Outputs}})
	if err != nil {
		return err
	}
	return st.startStageWorker(messages.PoolSandbox, c, 2, sandboxStages.Register, codeMode.Register)
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

// startStageWorker starts the <pool>-worker: the stages registers put on a
// mux (then Options.Register's), cached in c, in Config.Concurrency slots
// (defaultSlots when unset).
func (st *Stack) startStageWorker(pool messages.Pool, c cache.Cache, defaultSlots int, registers ...func(*stagework.Mux)) error {
	cfg, name := st.opts.Config, string(pool)+"-worker"
	mux := stagework.NewMux(st.stages)
	for _, register := range append(registers, st.opts.Register) {
		if register != nil {
			register(mux)
		}
	}
	layer := metrics.LayerLocal
	if cfg.RedisURL != "" {
		layer = metrics.LayerRedis
	}
	// Only the stage executor's lookups are counted: the docker backend's
	// locks and heartbeats use c directly.
	c, err := st.opts.Metrics.Cache(c, layer)
	if err != nil {
		return err
	}
	m, err := st.opts.Metrics.Stages(st.stages)
	if err != nil {
		return err
	}
	cancels := stagework.NewCancels() // a cancelled job's stages stop
	sub, err := cancels.Listen(st.Conn)
	if err != nil {
		return fmt.Errorf("%s: subscribe to cancellations: %w", name, err)
	}
	st.closers = append(st.closers, sub.Unsubscribe)
	x, err := stagework.NewExecutor(stagework.Config{Mux: mux, Pool: pool, Publisher: st.Publisher, Offers: st.Publisher, Cache: c, CacheTTL: cfg.CacheTTL,
		Jobs: stagework.KVJobs{KV: st.Resources.JobState}, Cancels: cancels,
		Logger: st.log.With("component", name), Worker: cfg.WorkerName, Metrics: m,
		Announce: st.announcer(pool)}) // ops.go
	if err != nil {
		return err
	}
	w := st.consume(name, st.Resources.StageConsumers[pool], x, concurrency(cfg.Concurrency, defaultSlots), st.watchPause(pool))
	st.advertise(pool, w) // ops.go
	return nil
}

func concurrency(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}
