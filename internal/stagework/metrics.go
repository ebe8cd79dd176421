package stagework

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Metric names of stage work.
const (
	MetricStageResults = "autocoder_stage_results_total"
	MetricStageSeconds = "autocoder_stage_duration_seconds"
)

// NewMetrics registers stage metrics on reg and returns the Config.OnResult
// hook that records them. Labels are the stage and whether the result came
// from the cache; outcome is ok or error. No job IDs.
func NewMetrics(reg prometheus.Registerer) (func(messages.Stage, bool, string, time.Duration), error) {
	results := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricStageResults,
		Help: "Stage results published, by stage, cache hit and outcome."}, []string{"stage", "cached", "outcome"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricStageSeconds,
		Help: "Time to produce a stage result, by stage and cache hit.", Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12)},
		[]string{"stage", "cached"})
	for _, c := range []prometheus.Collector{results, seconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return func(stage messages.Stage, cached bool, errMsg string, d time.Duration) {
		c := "false"
		if cached {
			c = "true"
		}
		outcome := "ok"
		if errMsg != "" {
			outcome = "error"
		}
		results.WithLabelValues(string(stage), c, outcome).Inc()
		seconds.WithLabelValues(string(stage), c).Observe(d.Seconds())
	}, nil
}
