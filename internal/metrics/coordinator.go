package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// coordinatorMetrics is coordinator.Metrics on Prometheus.
type coordinatorMetrics struct {
	steps        *prometheus.CounterVec
	finishedJobs *prometheus.CounterVec
	casConflicts prometheus.Counter
	jobSeconds   prometheus.Histogram
	iterations   prometheus.Histogram
	running      prometheus.Gauge
	dispatched   *prometheus.CounterVec
	deadlines    *prometheus.CounterVec
	refused      prometheus.Counter
	taken        *prometheus.CounterVec
}

// casHelp says where conflicts come from. One coordinator takes a job's
// steps one at a time (coordinator/joblocks.go), so its conflicts are
// rare: an outbox cleared late (coordinator/outbox.go) as the job's next
// step begins, or a dead letter replayed. Several coordinators, each
// keeping a copy of the job, conflict when they step the same job.
const casHelp = "Compare-and-set conflicts on a job's state: the job moved since this coordinator's copy, which is " +
	"then read again and the event stepped on it. One coordinator takes a job's steps one at a time, so its conflicts " +
	"are rare (a delayed outbox clear meeting the next step, a replayed dead letter); several coordinators stepping the " +
	"same jobs add more. Harmless retries unless it grows with load."

var _ coordinator.Metrics = (*coordinatorMetrics)(nil)

// newCoordinatorMetrics registers the coordinator's metrics on reg.
func newCoordinatorMetrics(reg prometheus.Registerer) (*coordinatorMetrics, error) {
	m := &coordinatorMetrics{
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: CoordinatorStepsTotal,
			Help: "State machine steps applied, by event kind."}, []string{"kind"}),
		finishedJobs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: JobsFinishedTotal,
			Help: "Jobs finished, by status and outcome (passed, rejected, exhausted, failed, infrastructure, cancelled)."},
			[]string{"status", "outcome"}),
		casConflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: CoordinatorCASConflictsTotal, Help: casHelp}),
		jobSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: JobDurationSeconds,
			Help: "Wall time from submission to finish.", Buckets: JobBuckets}),
		iterations: prometheus.NewHistogram(prometheus.HistogramOpts{Name: JobIterations,
			Help: "Iterations (code attempts) of each finished job.", Buckets: IterationBuckets}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Name: JobsRunning,
			Help: "Jobs with a stage in flight, as this coordinator's deadline watch sees the state bucket."}),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: StagesDispatchedTotal,
			Help: "Stage commands dispatched, by stage (fix, patch_tests, packages and code after the first are repair routes)."},
			[]string{"stage"}),
		deadlines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: StageDeadlinesMissedTotal,
			Help: "Dispatched stages failed by the coordinator for missing their deadline, by stage."}, []string{"stage"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: CoordinatorResultsRefusedTotal,
			Help: "Stage results and stage_started notices refused for arriving on the subject of a pool that does not do their stage, or of another job."}),
		taken: prometheus.NewCounterVec(prometheus.CounterOpts{Name: CoordinatorResultsTakenTotal,
			Help: "Stage results applied, by the way they came: offer (offered by the worker and taken) or stream (delivered by the result stream, when no coordinator took the offer)."},
			[]string{"copy"}),
	}
	for _, which := range []string{coordinator.CopyOffer, coordinator.CopyStream} {
		m.taken.WithLabelValues(which)
	}
	for _, s := range messages.DefaultStages().Stages() {
		m.deadlines.WithLabelValues(string(s)) // every series from the start: rates see the first miss
	}
	for _, c := range []prometheus.Collector{m.steps, m.finishedJobs, m.casConflicts, m.jobSeconds, m.iterations,
		m.running, m.dispatched, m.deadlines, m.refused, m.taken} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Stepped implements coordinator.Metrics.
func (m *coordinatorMetrics) Stepped(kind string, dispatched []messages.Stage) {
	m.steps.WithLabelValues(kind).Inc()
	for _, s := range dispatched {
		m.dispatched.WithLabelValues(string(s)).Inc()
	}
}

// Finished implements coordinator.Metrics.
func (m *coordinatorMetrics) Finished(r *messages.Result) {
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

// JobsRunning implements coordinator.Metrics.
func (m *coordinatorMetrics) JobsRunning(n int) { m.running.Set(float64(n)) }

// CASConflict implements coordinator.Metrics.
func (m *coordinatorMetrics) CASConflict() { m.casConflicts.Inc() }

// DeadlineMissed implements coordinator.Metrics.
func (m *coordinatorMetrics) DeadlineMissed(stage messages.Stage) {
	m.deadlines.WithLabelValues(string(stage)).Inc()
}

// ResultRefused implements coordinator.Metrics.
func (m *coordinatorMetrics) ResultRefused() { m.refused.Inc() }

// ResultTaken implements coordinator.Metrics.
func (m *coordinatorMetrics) ResultTaken(which string) { m.taken.WithLabelValues(which).Inc() }
