package stack

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names of what the stack wires itself (the parts' own metrics live
// in their packages).
const (
	// MetricCacheSignatureFailures counts stage cache entries refused for
	// a missing, wrong or unknown-key signature, by {reason}.
	MetricCacheSignatureFailures = "autocoder_cache_signature_failures_total"
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
	return func(reason string) { failures.WithLabelValues(reason).Inc() }, nil
}
