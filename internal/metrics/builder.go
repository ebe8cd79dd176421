package metrics

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Builder attaches Prometheus metrics to the parts of one process, as
// Watermill's metrics builder decorates publishers and handlers: each
// method gives a part's observer, or the part itself decorated, with its
// families registered on the builder's registry (once: parts that share a
// family, such as submit --local's two stage workers, share its series).
// The parts only know their own small observer interfaces (bus.Metrics,
// stagework.Metrics, coordinator.Metrics, llm.Observer), so this is the
// one package that imports Prometheus.
//
// A nil *Builder attaches nothing: its observers are nil and its
// decorators return the part as given.
type Builder struct {
	reg *prometheus.Registry
}

// NewBuilder returns a builder on a new registry that also reports the Go
// runtime and the process (the collectors every Prometheus exporter has).
func NewBuilder() *Builder {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Builder{reg: reg}
}

// NewBuilderOn returns a builder on reg (tests read it with Gather).
func NewBuilderOn(reg *prometheus.Registry) *Builder { return &Builder{reg: reg} }

// Handler serves the registry in the Prometheus text format (/metrics);
// nil for a nil builder.
func (b *Builder) Handler() http.Handler {
	if b == nil {
		return nil
	}
	return promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{Registry: b.reg})
}

// Bus is the observer of the bus workers.
func (b *Builder) Bus() (bus.Metrics, error) {
	if b == nil {
		return nil, nil
	}
	m, err := newBusMetrics(b.reg)
	if err != nil {
		return nil, fmt.Errorf("bus metrics: %w", err)
	}
	return m, nil
}

// Stages is the observer of the stage executors of stages.
func (b *Builder) Stages(stages messages.StageTable) (stagework.Metrics, error) {
	if b == nil {
		return nil, nil
	}
	m, err := newStageMetrics(b.reg, stages)
	if err != nil {
		return nil, fmt.Errorf("stage metrics: %w", err)
	}
	return m, nil
}

// Coordinator is the coordinator's observer, with the queue gauges of
// res's stage pools: read from NATS on every scrape, so one process per
// deployment (the coordinator's) reports them, not every worker.
func (b *Builder) Coordinator(res *bus.Resources) (coordinator.Metrics, error) {
	if b == nil {
		return nil, nil
	}
	m, err := newCoordinatorMetrics(b.reg)
	if err != nil {
		return nil, fmt.Errorf("coordinator metrics: %w", err)
	}
	if err := b.reg.Register(newQueueCollector(res)); err != nil && !alreadyRegistered(err) {
		return nil, fmt.Errorf("queue metrics: %w", err)
	}
	return m, nil
}

// Model is the model client's observer.
func (b *Builder) Model() (llm.Observer, error) {
	if b == nil {
		return nil, nil
	}
	m, err := NewModel(b.reg)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Backend is backend with its runs and builds measured.
func (b *Builder) Backend(backend sandbox.Backend) (sandbox.Backend, error) {
	if b == nil {
		return backend, nil
	}
	return ObserveBackend(backend, b.reg)
}

// Cache is c with its lookups counted under layer (LayerRedis or
// LayerLocal). Give it only to the user whose lookups should be counted
// (the stage cache), not to lock and heartbeat users of the same store.
func (b *Builder) Cache(c cache.Cache, layer string) (cache.Cache, error) {
	if b == nil || c == nil {
		return c, nil
	}
	return ObserveCache(c, layer, b.reg)
}

// CacheSignatures is cache.SignedConfig's OnFailure hook: it counts the
// stage cache entries refused for a missing, wrong or unknown-key
// signature, by reason; nil for a nil builder.
func (b *Builder) CacheSignatures() (func(reason string), error) {
	if b == nil {
		return nil, nil
	}
	failures, err := register(b.reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: CacheSignatureFailuresTotal,
		Help: "Stage cache entries refused as a miss because their signature is missing, wrong or made with an unknown key, by reason."},
		[]string{"reason"}))
	if err != nil {
		return nil, fmt.Errorf("cache metrics: %w", err)
	}
	for _, reason := range []string{cache.FailureUnsigned, cache.FailureUnknownKey, cache.FailureBadSignature} {
		failures.WithLabelValues(reason) // every series from the start: rates see the first failure
	}
	return func(reason string) { failures.WithLabelValues(reason).Inc() }, nil
}

// alreadyRegistered reports a collector registered before with the same
// descriptors.
func alreadyRegistered(err error) bool {
	var are prometheus.AlreadyRegisteredError
	return errors.As(err, &are)
}
