package coordinator

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Metrics of the coordinator. A nil *Metrics records nothing.
type Metrics struct {
	steps        *prometheus.CounterVec
	finishedJobs *prometheus.CounterVec
	casConflicts prometheus.Counter
	jobSeconds   prometheus.Histogram
	iterations   prometheus.Histogram
	running      prometheus.Gauge
	dispatched   *prometheus.CounterVec
	deadlines    *prometheus.CounterVec
	refused      prometheus.Counter
}

// casHelp says where conflicts come from, as measured with one
// coordinator: the loop dispatches some stages together (code and tests
// after the plan), the coordinator handles each pool's results in several
// slots at once, and each step writes a job's state twice (with its outbox,
// then without it). Two results of one job that arrive together, as cache
// hits do within milliseconds, load the same revision, and one of them loses
// the compare-and-set and is stepped again on the fresh state. Several
// coordinators add more of the same.
const casHelp = "Compare-and-set conflicts on a job's state: two events of one job stepped at once, one stepped again " +
	"on the other's state. With one coordinator they come from stages dispatched together (code and tests after the plan) " +
	"whose results arrive together, as cache hits do, and are handled in parallel result slots; each step also writes " +
	"twice (state with outbox, then without). Several coordinators add more. Harmless retries unless it grows with load."

// NewMetrics registers the coordinator's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.CoordinatorStepsTotal,
			Help: "State machine steps applied, by event kind."}, []string{"kind"}),
		finishedJobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.JobsFinishedTotal,
			Help: "Jobs finished, by status and outcome (passed, rejected, exhausted, failed, infrastructure, cancelled)."},
			[]string{"status", "outcome"}),
		casConflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: metrics.CoordinatorCASConflictsTotal, Help: casHelp}),
		jobSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metrics.JobDurationSeconds,
			Help: "Wall time from submission to finish.", Buckets: metrics.JobBuckets}),
		iterations: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metrics.JobIterations,
			Help: "Iterations (code attempts) of each finished job.", Buckets: metrics.IterationBuckets}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: metrics.JobsRunning,
			Help: "Jobs with a stage in flight, as this coordinator's deadline watch sees the state bucket."}),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.StagesDispatchedTotal,
			Help: "Stage commands dispatched, by stage (fix, patch_tests, packages and code after the first are repair routes)."},
			[]string{"stage"}),
		deadlines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.StageDeadlinesMissedTotal,
			Help: "Dispatched stages failed by the coordinator for missing their deadline, by stage."}, []string{"stage"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: metrics.CoordinatorResultsRefusedTotal,
			Help: "Stage results and stage_started notices refused for arriving on the subject of a pool that does not do their stage, or of another job."}),
	}
	for _, s := range messages.Stages() {
		m.deadlines.WithLabelValues(string(s)) // every series from the start: rates see the first miss
	}
	reg.MustRegister(m.steps, m.finishedJobs, m.casConflicts, m.jobSeconds, m.iterations, m.running, m.dispatched,
		m.deadlines, m.refused)
	return m
}

// step counts an applied step and the stages it dispatched.
func (m *Metrics) step(ev machine.Input, cmds []machine.Command) {
	if m == nil {
		return
	}
	m.steps.WithLabelValues(string(ev.Kind)).Inc()
	for _, cmd := range cmds {
		if cmd.Dispatch != nil {
			m.dispatched.WithLabelValues(string(cmd.Dispatch.Stage)).Inc()
		}
	}
}

func (m *Metrics) finished(r *messages.Result) {
	if m == nil {
		return
	}
	m.finishedJobs.WithLabelValues(string(r.Status), jobOutcome(r)).Inc()
	if r.FinishedAt != nil && !r.SubmittedAt.IsZero() {
		m.jobSeconds.Observe(r.FinishedAt.Sub(r.SubmittedAt).Seconds())
	}
	if r.Attempts > 0 {
		m.iterations.Observe(float64(r.Attempts))
	}
}

// jobOutcome is a finished job's outcome label: why it ended, in a word.
func jobOutcome(r *messages.Result) string {
	switch {
	case r.Success:
		return "passed"
	case r.Status == messages.StatusErrored:
		return "infrastructure"
	case r.Status != messages.StatusFailed:
		return string(r.Status)
	case r.Attempts == 0 && len(r.Stages) == 0:
		return "rejected" // the submission was invalid
	case r.Spec != nil && r.Spec.Options.MaxIterations > 0 && r.Attempts >= r.Spec.Options.MaxIterations:
		return "exhausted"
	}
	return "failed"
}

// jobsRunning sets the running-jobs gauge.
func (m *Metrics) jobsRunning(n int) {
	if m == nil {
		return
	}
	m.running.Set(float64(n))
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
