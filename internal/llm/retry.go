package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Clock is the time source for backoff waits and Retry-After dates. Tests
// inject one that records waits instead of sleeping.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or until ctx is done and then returns its error.
	Sleep(ctx context.Context, d time.Duration) error
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// CallError is a model call that failed: the endpoint answered with an error
// status, or could not be reached (StatusCode 0), after the client's retries.
type CallError struct {
	StatusCode int    // HTTP status; 0 when no response arrived (network error, timeout)
	Message    string // the server's error message, if any
	// RetryAfter is the wait the server asked for (Retry-After). When it is
	// longer than OpenAIConfig.MaxBackoff the client does not wait in-process
	// but returns at once, so the caller can reschedule the work instead.
	RetryAfter time.Duration
	Attempts   int   // HTTP attempts made
	Err        error // the underlying go-openai or transport error

	temporary bool
}

func (e *CallError) Error() string {
	var b strings.Builder
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "status %d", e.StatusCode)
	} else {
		b.WriteString("request failed")
	}
	fmt.Fprintf(&b, " after %d attempt(s)", e.Attempts)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	switch {
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Err != nil:
		b.WriteString(": " + e.Err.Error())
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		b.WriteString(" (check OPENAI_API_KEY)")
	case http.StatusNotFound:
		b.WriteString(" (check the model name and OPENAI_BASE_URL)")
	}
	return b.String()
}

func (e *CallError) Unwrap() error { return e.Err }

// Temporary reports whether the failure may go away by itself (rate limit,
// server error, network error), so the work is worth retrying later. Auth,
// bad-request and not-found errors are not temporary.
func (e *CallError) Temporary() bool { return e.temporary }

// errNoChoices is a 200 reply without a message; some proxies send it under load.
var errNoChoices = errors.New("llm: reply has no choices")

// attemptKey carries an *attempt in the request context to recordingDoer.
type attemptKey struct{}

// attempt is what recordingDoer saw of one HTTP attempt. go-openai's errors
// carry the status but not the headers, and do not say whether the request
// reached the network, which is what retry decisions need.
type attempt struct {
	sent         bool
	netErr       error
	status       int
	retryAfter   string
	retryAfterMS string
	tooLarge     bool // the body went past the reply cap (cappedBody)
}

// recordingDoer is the HTTPDoer given to go-openai: it records the status and
// Retry-After headers of each response into the attempt in the request's
// context, and caps each response body at maxReply bytes (none if zero).
// Per-request state lives in the context (not the doer) so one client serves
// concurrent calls.
type recordingDoer struct {
	hc       *http.Client
	maxReply int64
}

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.hc.Do(req)
	a, _ := req.Context().Value(attemptKey{}).(*attempt)
	if err == nil && d.maxReply > 0 {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: d.maxReply, limit: d.maxReply, a: a}
	}
	if a != nil {
		a.sent = true
		if err != nil {
			a.netErr = err
		} else {
			a.status = resp.StatusCode
			a.retryAfter = resp.Header.Get("Retry-After")
			a.retryAfterMS = resp.Header.Get("Retry-After-Ms") // OpenAI's finer-grained variant
		}
	}
	return resp, err
}

// send makes one chat completion with retries on temporary failures, adding
// the usage of every reply received to usage. It returns the first choice.
func (c *OpenAI) send(ctx context.Context, req openai.ChatCompletionRequest, usage *messages.Usage) (openai.ChatCompletionChoice, error) {
	for n := 1; ; n++ {
		a := &attempt{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, a), c.timeout)
		began := c.clock.Now()
		resp, err := c.api.CreateChatCompletion(actx, req)
		cancel()
		c.observe(ctx, req.Model, began, err, a, resp.Usage)
		if err == nil {
			*usage = usage.Add(messages.Usage{
				InputTokens:  resp.Usage.PromptTokens,
				OutputTokens: resp.Usage.CompletionTokens,
				Calls:        1,
			})
			if len(resp.Choices) > 0 {
				return resp.Choices[0], nil
			}
			err = errNoChoices
		}
		if ctx.Err() != nil {
			return openai.ChatCompletionChoice{}, fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
		}
		cerr := c.classify(err, a, n)
		if !cerr.temporary || n > c.maxRetries {
			return openai.ChatCompletionChoice{}, cerr
		}
		wait := c.backoff(n)
		if cerr.RetryAfter > 0 {
			if cerr.RetryAfter > c.maxBackoff {
				c.log.LogAttrs(ctx, slog.LevelWarn, "llm: server asks to retry later than max backoff; giving up",
					slog.String("model", req.Model), slog.Duration("retry_after", cerr.RetryAfter))
				return openai.ChatCompletionChoice{}, cerr
			}
			wait = cerr.RetryAfter
		}
		c.log.LogAttrs(ctx, slog.LevelWarn, "llm: call failed; retrying",
			slog.String("model", req.Model), slog.Int("attempt", n), slog.Int("status", cerr.StatusCode),
			slog.Duration("wait", wait), slog.String("error", err.Error()))
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return openai.ChatCompletionChoice{}, fmt.Errorf("waiting to retry: %w (last error: %v)", err, cerr)
		}
	}
}

// classify turns a failed attempt into a CallError.
func (c *OpenAI) classify(err error, a *attempt, n int) *CallError {
	ce := &CallError{Attempts: n, Err: err}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		ce.Message = apiErr.Message
	case errors.As(err, &reqErr):
		ce.Message = clip(strings.TrimSpace(string(reqErr.Body)), 300)
	}
	switch {
	case a.tooLarge || errors.Is(err, ErrReplyTooLarge):
		// The endpoint answered, but with more than we keep: the same call
		// would flood again, so this is permanent.
		ce.StatusCode, ce.Message = a.status, replyTooLargeError{c.maxReply}.Error()
	case errors.Is(err, errNoChoices):
		ce.StatusCode, ce.temporary = a.status, true
	case !a.sent:
		// go-openai refused to build or send the request (e.g. a parameter
		// its validator rejects for the model): retrying cannot help.
	case a.netErr != nil:
		ce.temporary = true // connection refused or reset, attempt timeout
	case a.status >= 400:
		ce.StatusCode = a.status
		ce.temporary = retryableStatus(a.status)
		ce.RetryAfter = retryAfter(a, c.clock.Now())
	default:
		// A 2xx whose body did not decode: cut short by a proxy or the server.
		ce.StatusCode, ce.temporary = a.status, true
	}
	return ce
}

// retryableStatus follows OpenAI's own SDKs: timeouts, conflicts, rate
// limits and server errors are retried; other 4xx are the caller's fault.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// retryAfter parses Retry-After-Ms, or Retry-After as seconds or an HTTP date.
func retryAfter(a *attempt, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(a.retryAfterMS), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(a.retryAfter)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// backoff is the wait before retry n (1-based): exponential from
// InitialBackoff, capped at MaxBackoff, with "equal jitter" (half fixed, half
// random) so that many workers rate-limited together do not retry together.
func (c *OpenAI) backoff(n int) time.Duration {
	d := c.initialBackoff
	for i := 1; i < n && d < c.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.maxBackoff)
	half := d / 2
	return half + rand.N(d-half+1)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
