package stagework

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Metric names of stage work.
const (
	MetricStageResults = metrics.StageResultsTotal
	MetricStageSeconds = metrics.StageDurationSeconds
	MetricRefused      = metrics.StageCommandsRefusedTotal
)

// NewMetrics registers stage metrics on reg and returns the Config.OnResult
// hook that records them. Labels are the stage and whether the result came
// from the cache; outcome is ok or error. No job IDs.
func NewMetrics(reg prometheus.Registerer) (func(messages.Stage, bool, string, time.Duration), error) {
	results := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricStageResults,
		Help: "Stage results published, by stage, cache hit and outcome."}, []string{"stage", "cached", "outcome"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricStageSeconds,
		Help: "Time to produce a stage result, by stage and cache hit.", Buckets: metrics.StageBuckets},
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

// NewRefusalMetrics registers the refused-command counter on reg and
// returns the Config.OnRefused hook that counts. Labels are the stage (one
// no pool does counts as "unknown": the name is the sender's, and labels
// must stay few) and the reason.
func NewRefusalMetrics(reg prometheus.Registerer) (func(messages.Stage, string), error) {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRefused,
		Help: "Stage commands refused because the coordinator did not send them, by stage and reason."}, []string{"stage", "reason"})
	if err := reg.Register(refused); err != nil {
		return nil, err
	}
	known := map[messages.Stage]bool{}
	for _, s := range messages.DefaultStages().Stages() {
		known[s] = true
		for _, reason := range []string{RefusedWrongPool, RefusedNotPending} {
			refused.WithLabelValues(string(s), reason) // every series from the start: rates see the first refusal
		}
	}
	return func(stage messages.Stage, reason string) {
		if !known[stage] {
			stage = "unknown"
		}
		refused.WithLabelValues(string(stage), reason).Inc()
	}, nil
}
