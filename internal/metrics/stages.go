package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// stageMetrics is stagework.Metrics on Prometheus: StageResultsTotal and
// StageDurationSeconds by stage and cache hit, StageCommandsRefusedTotal by
// stage and reason. No job IDs.
type stageMetrics struct {
	results *prometheus.CounterVec
	seconds *prometheus.HistogramVec
	refused *prometheus.CounterVec
	known   map[messages.Stage]bool
}

var _ stagework.Metrics = (*stageMetrics)(nil)

func newStageMetrics(reg prometheus.Registerer, stages messages.StageTable) (*stageMetrics, error) {
	m := stageMetrics{known: map[messages.Stage]bool{}}
	var err error
	if m.results, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: StageResultsTotal,
		Help: "Stage results published, by stage, cache hit and outcome."}, []string{"stage", "cached", "outcome"})); err != nil {
		return nil, err
	}
	if m.seconds, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: StageDurationSeconds,
		Help: "Time to produce a stage result, by stage and cache hit.", Buckets: StageBuckets},
		[]string{"stage", "cached"})); err != nil {
		return nil, err
	}
	if m.refused, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: StageCommandsRefusedTotal,
		Help: "Stage commands refused because the coordinator does not have them pending, by stage and reason " +
			"(wrong_pool and unknown_job: not the coordinator's; job_finished and not_pending: routine, a cancelled job's queued commands or a redelivery)."}, []string{"stage", "reason"})); err != nil {
		return nil, err
	}
	for _, s := range stages.Stages() {
		m.known[s] = true
		for _, reason := range stagework.RefusalReasons {
			m.refused.WithLabelValues(string(s), reason) // every series from the start: rates see the first refusal
		}
	}
	return &m, nil
}

// StageDone implements stagework.Metrics; outcome is ok or error.
func (m *stageMetrics) StageDone(stage messages.Stage, cached, failed bool, d time.Duration) {
	c, outcome := "false", "ok"
	if cached {
		c = "true"
	}
	if failed {
		outcome = "error"
	}
	m.results.WithLabelValues(string(stage), c, outcome).Inc()
	m.seconds.WithLabelValues(string(stage), c).Observe(d.Seconds())
}

// CommandRefused implements stagework.Metrics. A stage not in the table
// counts as "unknown": the name is the sender's, and labels must stay few.
func (m *stageMetrics) CommandRefused(stage messages.Stage, reason string) {
	if !m.known[stage] {
		stage = "unknown"
	}
	m.refused.WithLabelValues(string(stage), reason).Inc()
}
