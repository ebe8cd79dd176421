package bus

import (
	"context"
	"runtime/debug"
)

// Handler handles one message. Its error decides the message's fate (see
// Permanent and RetryAfter); ctx is cancelled when the worker gives up
// waiting for it at shutdown.
type Handler interface {
	Handle(ctx context.Context, msg *Message) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, msg *Message) error

var _ Handler = HandlerFunc(nil)

// Handle calls f(ctx, msg).
func (f HandlerFunc) Handle(ctx context.Context, msg *Message) error { return f(ctx, msg) }

// handle runs the worker's handler on msg. A panic becomes a *PanicError,
// logged with its stack, so one bad message never crashes the process; the
// message is then retried like any failure. This is the bus's own net, for
// handlers with no failure policy of their own (the coordinator's): the
// stage executor recovers its handlers' panics itself, to answer them with
// a result (internal/stagework, policy.go).
func (w *Worker) handle(ctx context.Context, msg *Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			stack := debug.Stack()
			w.log.Error("bus handler panic", append(msg.logAttrs(), "panic", v, "stack", string(stack))...)
			err = &PanicError{Value: v, Stack: stack}
		}
	}()
	return w.handler.Handle(ctx, msg)
}
