package stack

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/cache"
)

// Metric names of what the stack wires itself (the parts' own metrics live
// in their packages).
const (
	// MetricCacheSignatureFailures counts stage cache entries refused for
	// a missing, wrong or unknown-key signature, by {reason}.
	MetricCacheSignatureFailures = metrics.CacheSignatureFailuresTotal
)

// newCacheMetrics registers the signature-failure counter on reg (or finds
// the one a previous stack on the same registry registered) and returns
// cache.SignedConfig's OnFailure hook.
func newCacheMetrics(reg prometheus.Registerer) (func(reason string), error) {
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricCacheSignatureFailures,
		Help: "Stage cache entries refused as a miss because their signature is missing, wrong or made with an unknown key, by reason."},
		[]string{"reason"})
	if err := reg.Register(failures); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
		if !ok {
			return nil, err
		}
		failures = existing
	}
	for _, reason := range []string{cache.FailureUnsigned, cache.FailureUnknownKey, cache.FailureBadSignature} {
		failures.WithLabelValues(reason) // every series from the start: rates see the first failure
	}
	return func(reason string) { failures.WithLabelValues(reason).Inc() }, nil
}

// registerQueues registers the stage pools' queue collector: in the
// coordinator only, since it asks NATS on every scrape.
func (st *Stack) registerQueues() error {
	if st.opts.Registry == nil {
		return nil
	}
	if err := st.opts.Registry.Register(bus.NewQueueCollector(st.Resources)); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return fmt.Errorf("queue metrics: %w", err)
		}
	}
	return nil
}

// modelObserver is the model client's metrics, pricing each call with
// AUTOCODER_MODEL_PRICES; nil without a registry.
func (st *Stack) modelObserver() (llm.Observer, error) {
	if st.opts.Registry == nil {
		return nil, nil
	}
	prices, err := metrics.ParsePrices(st.opts.Config.ModelPrices)
	if err != nil {
		return nil, err
	}
	m, err := metrics.NewModel(st.opts.Registry)
	if err != nil {
		return nil, err
	}
	return m.Priced(prices), nil
}

// observedBackend is st.Backend with its runs and builds measured; itself
// without a registry. st.Backend stays the backend itself.
func (st *Stack) observedBackend() (sandbox.Backend, error) {
	if st.opts.Registry == nil {
		return st.Backend, nil
	}
	return metrics.ObserveBackend(st.Backend, st.opts.Registry)
}

// observedCache is c with the stage cache's lookups counted, by the store
// behind it (the layer); c itself without a registry. Only the stage
// workers' lookups are counted: the docker backend's locks and heartbeats
// use c directly.
func (st *Stack) observedCache(c cache.Cache) (cache.Cache, error) {
	if st.opts.Registry == nil || c == nil {
		return c, nil
	}
	layer := metrics.LayerLocal
	if st.opts.Config.RedisURL != "" {
		layer = metrics.LayerRedis
	}
	return metrics.ObserveCache(c, layer, st.opts.Registry)
}

// warnMonitorIgnored says so when the NATS monitoring setting has nothing
// to apply to: it is the embedded server's, and this process joins a remote one.
func (st *Stack) warnMonitorIgnored() {
	if addr := st.opts.Config.NATSMonitorListen; addr != "" {
		st.log.Warn("AUTOCODER_NATS_MONITOR_LISTEN is ignored: it serves an embedded NATS server's monitoring, "+
			"and this process joins the one at AUTOCODER_NATS_URL (start that server with -m to monitor it)", "monitor_listen", addr)
	}
}
