package coordinator

import "github.com/autocoder/autocoder/pkg/messages"

// Metrics receives the coordinator's measurements; internal/metrics has the
// Prometheus one (Builder.Coordinator). Implementations must be safe for
// concurrent use.
type Metrics interface {
	// Stepped counts an applied step, by the kind of its input, and the
	// stages it dispatched.
	Stepped(kind string, dispatched []messages.Stage)
	// Finished counts a finished job.
	Finished(r *messages.Result)
	// JobsRunning is how many jobs have a stage in flight.
	JobsRunning(n int)
	// CASConflict counts a compare-and-set conflict on a job's state.
	CASConflict()
	// DeadlineMissed counts a stage failed for missing its deadline.
	DeadlineMissed(stage messages.Stage)
	// ResultRefused counts a result refused for its subject.
	ResultRefused()
	// ResultTaken counts a stage result applied, by the way it came:
	// CopyOffer or CopyStream (offer.go).
	ResultTaken(which string)
}

// The ways a stage result comes (offer.go), the label of ResultTaken.
const (
	CopyOffer  = "offer"  // offered by its worker, and taken
	CopyStream = "stream" // delivered by the result stream
)

type noMetrics struct{}

func (noMetrics) Stepped(string, []messages.Stage) {}
func (noMetrics) Finished(*messages.Result)        {}
func (noMetrics) JobsRunning(int)                  {}
func (noMetrics) CASConflict()                     {}
func (noMetrics) DeadlineMissed(messages.Stage)    {}
func (noMetrics) ResultRefused()                   {}
func (noMetrics) ResultTaken(string)               {}
