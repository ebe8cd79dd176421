package bus

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/metrics"
)

// PrometheusMetrics is Metrics on a Prometheus registry: MetricMessagesTotal,
// MetricHandleSeconds and MetricInFlight.
type PrometheusMetrics struct {
	messages *prometheus.CounterVec
	handle   *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
}

var _ Metrics = (*PrometheusMetrics)(nil)

// NewPrometheusMetrics registers the bus metrics on reg. A nil reg gives a
// nil *PrometheusMetrics, which records nothing. Register once per registry
// and share the result between the process's Workers: the consumer label
// tells them apart.
func NewPrometheusMetrics(reg *prometheus.Registry) (*PrometheusMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &PrometheusMetrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricMessagesTotal,
			Help: "Messages settled by bus workers, by consumer and outcome (ack, retry, term, exhausted, shutdown).",
		}, []string{"consumer", "outcome"}),
		handle: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: MetricHandleSeconds,
			Help: "Time bus handlers ran, by consumer.",
			// Stages run from milliseconds (cache hits) to the longest run a job may ask for.
			Buckets: metrics.StageBuckets,
		}, []string{"consumer"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricInFlight,
			Help: "Bus handlers running now, by consumer.",
		}, []string{"consumer"}),
	}
	for _, c := range []prometheus.Collector{m.messages, m.handle, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("bus: register metrics: %w", err)
		}
	}
	return m, nil
}

// HandleStarted implements Metrics.
func (m *PrometheusMetrics) HandleStarted(consumer string) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(consumer).Inc()
}

// HandleDone implements Metrics.
func (m *PrometheusMetrics) HandleDone(consumer string, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.inFlight.WithLabelValues(consumer).Dec()
	m.handle.WithLabelValues(consumer).Observe(elapsed.Seconds())
}

// MessageSettled implements Metrics.
func (m *PrometheusMetrics) MessageSettled(consumer string, outcome Outcome) {
	if m == nil {
		return
	}
	m.messages.WithLabelValues(consumer, string(outcome)).Inc()
}
