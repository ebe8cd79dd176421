package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
)

// busMetrics is bus.Metrics on Prometheus: BusMessagesTotal,
// BusHandleSeconds and BusInFlight, shared by a process's workers (the
// consumer label tells them apart).
type busMetrics struct {
	messages *prometheus.CounterVec
	handle   *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
}

var _ bus.Metrics = (*busMetrics)(nil)

func newBusMetrics(reg prometheus.Registerer) (*busMetrics, error) {
	var m busMetrics
	var err error
	if m.messages, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: BusMessagesTotal,
		Help: "Messages settled by bus workers, by consumer and outcome (ack, retry, term, exhausted, shutdown)."},
		[]string{"consumer", "outcome"})); err != nil {
		return nil, err
	}
	// Stages run from milliseconds (cache hits) to the longest run a job may ask for.
	if m.handle, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: BusHandleSeconds,
		Help: "Time bus handlers ran, by consumer.", Buckets: StageBuckets}, []string{"consumer"})); err != nil {
		return nil, err
	}
	if m.inFlight, err = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: BusInFlight,
		Help: "Bus handlers running now, by consumer."}, []string{"consumer"})); err != nil {
		return nil, err
	}
	return &m, nil
}

// HandleStarted implements bus.Metrics.
func (m *busMetrics) HandleStarted(consumer string) { m.inFlight.WithLabelValues(consumer).Inc() }

// HandleDone implements bus.Metrics.
func (m *busMetrics) HandleDone(consumer string, elapsed time.Duration) {
	m.inFlight.WithLabelValues(consumer).Dec()
	m.handle.WithLabelValues(consumer).Observe(elapsed.Seconds())
}

// MessageSettled implements bus.Metrics.
func (m *busMetrics) MessageSettled(consumer string, outcome bus.Outcome) {
	m.messages.WithLabelValues(consumer, string(outcome)).Inc()
}
