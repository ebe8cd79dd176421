package bus

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"
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

// Middleware wraps a Handler with cross-cutting behaviour (panic recovery,
// logging, dead-lettering, metrics).
type Middleware func(Handler) Handler

// Chain wraps h with mws; the first middleware is the outermost, so
// Chain(h, Logging(l), Recover(l)) logs the error a recovered panic becomes.
func Chain(h Handler, mws ...Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// Recover turns a panic in the handler into a *PanicError, logged with its
// stack, so one bad message never crashes the process. The message is then
// retried like any failure. Worker always applies it outermost; add it
// inside other middleware so they see the error.
func Recover(logger *slog.Logger) Middleware {
	if logger == nil {
		logger = discardLogger()
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, msg *Message) (err error) {
			defer func() {
				if v := recover(); v != nil {
					stack := debug.Stack()
					logger.Error("bus handler panic", append(msg.logAttrs(), "panic", v, "stack", string(stack))...)
					err = &PanicError{Value: v, Stack: stack}
				}
			}()
			return next.Handle(ctx, msg)
		})
	}
}

// Logging logs each handled message with its job_id and stage (from the
// HeaderJobID and HeaderStage headers), subject, delivery count, duration and
// error: Debug when it starts, Info when it succeeds, Warn when it fails.
func Logging(logger *slog.Logger) Middleware {
	if logger == nil {
		logger = discardLogger()
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, msg *Message) error {
			l := logger.With(msg.logAttrs()...)
			l.DebugContext(ctx, "handling message")
			start := time.Now()
			err := next.Handle(ctx, msg)
			if err != nil {
				l.WarnContext(ctx, "handler failed", "duration", time.Since(start), "error", err)
				return err
			}
			l.InfoContext(ctx, "handled message", "duration", time.Since(start))
			return nil
		})
	}
}
