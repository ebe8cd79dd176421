package bus

import "time"

// Outcome is what a Worker did with a message; the "outcome" label.
type Outcome string

const (
	OutcomeAck       Outcome = "ack"       // handler succeeded
	OutcomeRetry     Outcome = "retry"     // NakWithDelay: an error or RetryAfter
	OutcomeTerm      Outcome = "term"      // Permanent, or not a JetStream message
	OutcomeExhausted Outcome = "exhausted" // failed on its last delivery; left to the dead letters
	OutcomeShutdown  Outcome = "shutdown"  // handed back (Nak) because the worker stopped
)

// Metrics receives a Worker's measurements. Implementations must be safe for
// concurrent use. A nil WorkerConfig.Metrics records nothing.
type Metrics interface {
	// HandleStarted is called when a handler starts (in_flight up).
	HandleStarted(consumer string)
	// HandleDone is called when it returns (in_flight down, run time).
	HandleDone(consumer string, elapsed time.Duration)
	// MessageSettled is called once per delivery with what became of it.
	MessageSettled(consumer string, outcome Outcome)
}

type nopMetrics struct{}

func (nopMetrics) HandleStarted(string)             {}
func (nopMetrics) HandleDone(string, time.Duration) {}
func (nopMetrics) MessageSettled(string, Outcome)   {}

var _ Metrics = nopMetrics{}
