package coordinator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Metrics of the coordinator. A nil *Metrics records nothing.
type Metrics struct {
	steps        *prometheus.CounterVec
	finishedJobs *prometheus.CounterVec
	casConflicts prometheus.Counter
	jobSeconds   prometheus.Histogram
	deadlines    *prometheus.CounterVec
	refused      prometheus.Counter
}

// NewMetrics registers the coordinator's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "autocoder_coordinator_steps_total",
			Help: "State machine steps applied, by event kind."}, []string{"kind"}),
		finishedJobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "autocoder_jobs_finished_total",
			Help: "Jobs finished, by status."}, []string{"status"}),
		casConflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "autocoder_coordinator_cas_conflicts_total",
			Help: "Compare-and-set conflicts on job state (coordinators racing on one job)."}),
		jobSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "autocoder_job_duration_seconds",
			Help: "Wall time from submission to finish.", Buckets: prometheus.ExponentialBuckets(0.5, 2, 14)}),
		deadlines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "autocoder_stage_deadlines_missed_total",
			Help: "Dispatched stages failed by the coordinator for missing their deadline, by stage."}, []string{"stage"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "autocoder_coordinator_results_refused_total",
			Help: "Stage results refused for arriving on the result subject of a pool that does not do their stage, or of another job."}),
	}
	reg.MustRegister(m.steps, m.finishedJobs, m.casConflicts, m.jobSeconds, m.deadlines, m.refused)
	return m
}

func (m *Metrics) step(ev machine.Input, s machine.State) {
	if m == nil {
		return
	}
	m.steps.WithLabelValues(string(ev.Kind)).Inc()
}

func (m *Metrics) finished(r *messages.Result) {
	if m == nil {
		return
	}
	m.finishedJobs.WithLabelValues(string(r.Status)).Inc()
	if r.FinishedAt != nil && !r.SubmittedAt.IsZero() {
		m.jobSeconds.Observe(r.FinishedAt.Sub(r.SubmittedAt).Seconds())
	}
}

func (m *Metrics) casConflict() {
	if m == nil {
		return
	}
	m.casConflicts.Inc()
}

func (m *Metrics) deadlineMissed(stage messages.Stage) {
	if m == nil {
		return
	}
	m.deadlines.WithLabelValues(string(stage)).Inc()
}

func (m *Metrics) resultRefused() {
	if m == nil {
		return
	}
	m.refused.Inc()
}
