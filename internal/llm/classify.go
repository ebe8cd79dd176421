package llm

import (
	"errors"
	"time"
)

// Verdict is what a failed model call means for the work that made it: the
// model side of the stage executor's failure policy (internal/stagework,
// policy.go). The client has already retried in-process (see send): a
// verdict is about the error it finally gave up with.
type Verdict struct {
	// Permanent: the same call would fail the same way, so retrying the work
	// cannot help: a reply that never fitted its schema (ErrInvalidReply), or
	// a request the endpoint refused (auth, bad request, not found; see
	// CallError.Temporary), a reply past the size cap (ErrReplyTooLarge), a
	// model the table lacks (ErrUnknownModel) or a prompt past its context
	// (ErrPromptTooLong).
	Permanent bool
	// RetryAfter is the wait the endpoint asked for (Retry-After) when it
	// was longer than the client would wait in-process; zero otherwise.
	RetryAfter time.Duration
}

// Classify gives the verdict on err, an error of a Client call. Errors it
// does not know (a cancelled context, a network error the client gave up
// on) are retryable.
func Classify(err error) Verdict {
	if err == nil {
		return Verdict{}
	}
	if errors.Is(err, ErrInvalidReply) || errors.Is(err, ErrReplyTooLarge) || errors.Is(err, ErrUnknownModel) || errors.Is(err, ErrPromptTooLong) {
		return Verdict{Permanent: true}
	}
	var ce *CallError
	if !errors.As(err, &ce) {
		return Verdict{}
	}
	if !ce.Temporary() {
		return Verdict{Permanent: true}
	}
	return Verdict{RetryAfter: ce.RetryAfter}
}

// IsPermanent reports whether retrying the call that failed with err cannot help.
func IsPermanent(err error) bool { return Classify(err).Permanent }
