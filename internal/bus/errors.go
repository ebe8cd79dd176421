package bus

import (
	"errors"
	"fmt"
	"time"
)

// A Handler chooses what happens to its message by the error it returns; the
// Worker maps it to JetStream in one place (Worker.settle):
//
//	nil                 Ack: done, removed from the work queue
//	Permanent(err)      Term: never redelivered (logged)
//	RetryAfter(err, d)  NakWithDelay(d): redelivered after d
//	any other error     NakWithDelay(WorkerConfig.RetryDelay(n)): exponential backoff
//
// A failure on the last delivery (Message.LastDelivery) is handed back at
// once, so the server gives the message up with a max-deliveries advisory
// and a coordinator dead-letters it; and a handler cancelled by shutdown is Nak'ed at once
// so another worker picks it up. Stage handlers do not see this: the stage
// executor (internal/stagework, policy.go) answers for them with a result.

// Permanent marks err as not worth retrying: the same message will fail the
// same way (bad input, a refused request). The message is terminated.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err, or an error it wraps, came from Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// RetryAfter asks for the message to be delivered again after d, instead of
// after the worker's backoff: for a rate limit with a Retry-After, or a
// resource known to be back at a given time. RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, delay: max(d, 0)}
}

type retryAfterError struct {
	err   error
	delay time.Duration
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.delay, e.err)
}
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryDelayOf returns the delay asked for with RetryAfter, if any.
func RetryDelayOf(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.delay, true
	}
	return 0, false
}

// PanicError is what a handler's panic becomes (see Recover). It is retried
// like any other error: a panic is usually a bug hit by one input, so after
// MaxDeliver attempts the message is terminated rather than crashing every
// worker that takes it.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string { return fmt.Sprintf("bus: handler panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error (panic(err)).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
