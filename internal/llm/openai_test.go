package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/modeltable"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock records backoff waits instead of sleeping.
type fakeClock struct {
	now time.Time

	mu    sync.Mutex
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	return ctx.Err()
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// setup starts a fake server and a client on it with a recording clock.
// edit, if not nil, adjusts the config.
func setup(t *testing.T, opts []fakellm.Option, edit func(*llm.OpenAIConfig)) (*fakellm.Server, *llm.OpenAI, *fakeClock) {
	t.Helper()
	s := fakellm.New(opts...)
	t.Cleanup(s.Close)
	// A transport per test, so idle connections are closed with the test
	// and the leak check sees no stray goroutines.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	clock := &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	cfg := llm.OpenAIConfig{
		BaseURL:    s.URL(),
		APIKey:     "test-key",
		HTTPClient: &http.Client{Transport: tr},
		Clock:      clock,
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := llm.NewOpenAI(cfg)
	if err != nil {
		t.Fatalf("NewOpenAI: %v", err)
	}
	return s, c, clock
}

var testPlan = messages.Plan{Description: "sum the sales", Approach: "read the CSV with csv.DictReader"}

func planRequest(model string) llm.StructuredRequest {
	return llm.StructuredRequest{
		Model: model,
		Messages: []messages.ChatMessage{
			{Role: "system", Content: "You plan Python scripts."},
			{Role: "user", Content: "Sum the revenue in sales.csv."},
		},
		Schema: llm.PlanSchema,
	}
}

func decodePlan(t *testing.T, reply llm.StructuredReply) messages.Plan {
	t.Helper()
	var p messages.Plan
	if err := json.Unmarshal(reply.JSON, &p); err != nil {
		t.Fatalf("reply JSON %s: %v", reply.JSON, err)
	}
	return p
}

func formats(reqs []fakellm.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Format+":"+r.SchemaName)
	}
	return out
}

func TestStructuredGoodReply(t *testing.T) {
	t.Parallel()
	s, c, clock := setup(t, nil, nil)
	s.On("plan", fakellm.JSON(testPlan).Usage(120, 30))

	reply, err := c.Structured(t.Context(), planRequest("gpt-4.1"))
	if err != nil {
		t.Fatalf("Structured: %v", err)
	}
	if diff := cmp.Diff(testPlan, decodePlan(t, reply)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(messages.Usage{InputTokens: 120, OutputTokens: 30, Calls: 1}, reply.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Format != fakellm.FormatJSONSchema || r.SchemaName != "plan" || !r.Strict || r.Model != "gpt-4.1" || r.APIKey != "test-key" {
		t.Errorf("request = format %q name %q strict %v model %q key %q; want json_schema plan strict gpt-4.1 test-key",
			r.Format, r.SchemaName, r.Strict, r.Model, r.APIKey)
	}
	if !jsonEqual(t, r.Schema, llm.PlanSchema.Schema) {
		t.Errorf("schema sent = %s, want PlanSchema", r.Schema)
	}
	if got := len(r.Messages); got != 2 {
		t.Errorf("sent %d messages, want the 2 given", got)
	}
	if w := clock.Waits(); len(w) != 0 {
		t.Errorf("waited %v, want no waits", w)
	}
}

func TestStructuredFallsBackWhenJSONSchemaRefused(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, []fakellm.Option{fakellm.RefuseJSONSchema()}, nil)
	s.On("plan", fakellm.JSON(testPlan))

	for i := range 2 {
		reply, err := c.Structured(t.Context(), planRequest("small-model"))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if diff := cmp.Diff(testPlan, decodePlan(t, reply)); diff != "" {
			t.Errorf("call %d plan (-want +got):\n%s", i, diff)
		}
	}
	// The refusal is remembered per model: another model tries json_schema again.
	if _, err := c.Structured(t.Context(), planRequest("other-model")); err != nil {
		t.Fatalf("other model: %v", err)
	}

	reqs := s.Requests()
	want := []string{"json_schema:plan", "json_object:plan", "json_object:plan", "json_schema:plan", "json_object:plan"}
	if diff := cmp.Diff(want, formats(reqs)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	sys := reqs[1].Messages[0]
	if sys.Role != "system" || !strings.HasPrefix(sys.Content, "You plan Python scripts.") ||
		!strings.Contains(sys.Content, "Schema name: plan\n") || !strings.Contains(sys.Content, `"approach"`) {
		t.Errorf("fallback system message = %q; want the original system text, the schema name line and the schema", sys.Content)
	}
	if len(reqs[1].Messages) != 2 {
		t.Errorf("fallback sent %d messages, want 2 (schema merged into the system message)", len(reqs[1].Messages))
	}
}

func TestStructuredFallsBackToNoResponseFormat(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, []fakellm.Option{fakellm.RefuseJSONSchema(), fakellm.RefuseJSONObject()}, nil)
	s.On("plan", fakellm.Text("Here you go:\n"+mustJSON(t, testPlan)))

	req := planRequest("tiny")
	req.Messages = req.Messages[1:] // no system message: the client adds one
	reply, err := c.Structured(t.Context(), req)
	if err != nil {
		t.Fatalf("Structured: %v", err)
	}
	if diff := cmp.Diff(testPlan, decodePlan(t, reply)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	reqs := s.Requests()
	if diff := cmp.Diff([]string{"json_schema:plan", "json_object:plan", "text:plan"}, formats(reqs)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if r := reqs[2].Messages[0]; r.Role != "system" || !strings.Contains(r.Content, "Schema name: plan") {
		t.Errorf("first message = %+v, want an added system message naming the schema", r)
	}
}

func TestStructuredRetriesServerErrors(t *testing.T) {
	t.Parallel()
	s, c, clock := setup(t, nil, nil)
	s.On("plan", fakellm.Status(500, ""), fakellm.Status(502, ""), fakellm.Drop(), fakellm.JSON(testPlan))

	reply, err := c.Structured(t.Context(), planRequest("m"))
	if err != nil {
		t.Fatalf("Structured: %v", err)
	}
	if diff := cmp.Diff(testPlan, decodePlan(t, reply)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("got %d requests, want 4", n)
	}
	// Equal jitter: retry n waits between half and all of 500ms * 2^(n-1).
	waits := clock.Waits()
	if len(waits) != 3 {
		t.Fatalf("waits = %v, want 3", waits)
	}
	for i, w := range waits {
		full := 500 * time.Millisecond << i
		if w < full/2 || w > full {
			t.Errorf("wait %d = %s, want within [%s, %s]", i+1, w, full/2, full)
		}
	}
	if reply.Usage.Calls != 1 {
		t.Errorf("usage calls = %d, want 1 (failed attempts bill nothing)", reply.Usage.Calls)
	}
}

func TestStructuredHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name       string
		retryAfter string
		wantWait   time.Duration
	}{
		{"seconds", "1", time.Second},
		{"http date", now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c, clock := setup(t, nil, nil)
			s.On("plan", fakellm.Status(http.StatusTooManyRequests, tt.retryAfter), fakellm.JSON(testPlan))
			if _, err := c.Structured(t.Context(), planRequest("m")); err != nil {
				t.Fatalf("Structured: %v", err)
			}
			waits := clock.Waits()
			if tt.wantWait == 0 {
				// No usable Retry-After: the client's own backoff applies.
				if len(waits) != 1 || waits[0] <= 0 || waits[0] > 500*time.Millisecond {
					t.Errorf("waits = %v, want one backoff within 500ms", waits)
				}
				return
			}
			if diff := cmp.Diff([]time.Duration{tt.wantWait}, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStructuredRetryAfterBeyondMaxBackoff(t *testing.T) {
	t.Parallel()
	s, c, clock := setup(t, nil, nil)
	s.On("plan", fakellm.Status(http.StatusTooManyRequests, "120"), fakellm.JSON(testPlan))

	_, err := c.Structured(t.Context(), planRequest("m"))
	var ce *llm.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *llm.CallError", err)
	}
	if ce.StatusCode != 429 || ce.RetryAfter != 2*time.Minute || !ce.Temporary() {
		t.Errorf("CallError = status %d retry after %s temporary %v; want 429, 2m0s, true", ce.StatusCode, ce.RetryAfter, ce.Temporary())
	}
	if n, w := len(s.Requests()), clock.Waits(); n != 1 || len(w) != 0 {
		t.Errorf("%d requests and waits %v; want 1 request and no wait (the caller reschedules)", n, w)
	}
}

func TestStructuredGivesUpAfterMaxRetries(t *testing.T) {
	t.Parallel()
	s, c, clock := setup(t, nil, func(cfg *llm.OpenAIConfig) { cfg.MaxRetries = 2 })
	s.On("plan", fakellm.Status(503, ""))

	_, err := c.Structured(t.Context(), planRequest("m"))
	var ce *llm.CallError
	if !errors.As(err, &ce) || ce.StatusCode != 503 || ce.Attempts != 3 || !ce.Temporary() {
		t.Fatalf("err = %v; want a temporary CallError with status 503 after 3 attempts", err)
	}
	if n, w := len(s.Requests()), len(clock.Waits()); n != 3 || w != 2 {
		t.Errorf("%d requests, %d waits; want 3 and 2", n, w)
	}
}

func TestStructuredClientErrorsNotRetried(t *testing.T) {
	t.Parallel()
	for _, code := range []int{400, 401, 403, 404} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			s, c, clock := setup(t, nil, nil)
			s.On("plan", fakellm.Status(code, "").ErrorMessage("nope"), fakellm.JSON(testPlan))

			_, err := c.Structured(t.Context(), planRequest("m"))
			var ce *llm.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *llm.CallError", err)
			}
			if ce.StatusCode != code || ce.Temporary() || ce.Attempts != 1 || ce.Message != "nope" {
				t.Errorf("CallError = %+v; want status %d, not temporary, 1 attempt, message nope", ce, code)
			}
			if errors.Is(err, llm.ErrInvalidReply) {
				t.Errorf("err = %v; a refused call is not an invalid reply", err)
			}
			if n, w := len(s.Requests()), clock.Waits(); n != 1 || len(w) != 0 {
				t.Errorf("%d requests and waits %v; want 1 request, no waits", n, w)
			}
		})
	}
}

func TestStructuredUnauthorizedErrorMessage(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, nil, nil)
	s.On("plan", fakellm.Status(401, "").ErrorMessage("Incorrect API key provided"))
	_, err := c.Structured(t.Context(), planRequest("m"))
	want := "llm: plan call: status 401 after 1 attempt(s): Incorrect API key provided (check OPENAI_API_KEY)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestCutStringIsAskedAgain: a reply cut off (max_tokens) inside a string
// field is not repaired by closing the string, which would pass a program
// or a test file cut short as whole: the field is dropped, the schema
// misses it, and the model is asked again, told it was cut off.
func TestCutStringIsAskedAgain(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, nil, nil)
	s.On("plan", fakellm.Truncated(`{"description": "sum the sales", "approach": "read the CSV with csv.DictReader`), fakellm.JSON(testPlan))
	reply, err := c.Structured(t.Context(), planRequest("m"))
	if err != nil {
		t.Fatalf("Structured: %v", err)
	}
	if diff := cmp.Diff(testPlan, decodePlan(t, reply)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want the cut reply asked again once", len(reqs))
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1].Content; !strings.Contains(last, "cut off") {
		t.Errorf("the correction says %q, want it to say the reply was cut off", last)
	}
}

// TestEmptyReplyIsNotEchoed: an empty reply (a reasoning model that spent
// its tokens thinking) is asked again without an empty assistant message,
// which the API refuses with a 400 that would fail the stage for good.
func TestEmptyReplyIsNotEchoed(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, nil, nil)
	s.On("plan", fakellm.Truncated(""), fakellm.JSON(testPlan))
	if _, err := c.Structured(t.Context(), planRequest("m")); err != nil {
		t.Fatalf("Structured: %v", err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, m := range reqs[1].Messages {
		if m.Role == "assistant" && strings.TrimSpace(m.Content) == "" {
			t.Errorf("the correction carries an empty assistant message: %+v", reqs[1].Messages)
		}
	}
}

// Replies that need repair, each accepted on the first call.
func TestStructuredRepairsReplies(t *testing.T) {
	t.Parallel()
	good := mustJSON(t, testPlan)
	tests := []struct {
		name  string
		reply fakellm.Reply
	}{
		{"fenced", fakellm.Text("```json\n" + good + "\n```")},
		{"fenced without language", fakellm.Text("```\n" + good + "\n```\n")},
		{"prose around", fakellm.Text("Sure! Here is the plan {as asked}:\n" + good + "\nLet me know {if} you need more.")},
		{"think block", fakellm.Text(`<think>maybe {"description": "x"}</think>` + good)},
		{"nested under schema name", fakellm.Text(`{"plan": ` + good + `}`)},
		{"truncated in fence", fakellm.Truncated("```json\n{\"description\": \"sum the sales\", \"approach\": \"read the CSV with csv.DictReader\", \"notes\": [\"a\", \"b")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c, _ := setup(t, nil, nil)
			s.On("plan", tt.reply)
			reply, err := c.Structured(t.Context(), planRequest("m"))
			if err != nil {
				t.Fatalf("Structured: %v", err)
			}
			if diff := cmp.Diff(testPlan, decodePlan(t, reply)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("got %d requests, want 1 (repaired, not asked again)", n)
			}
		})
	}
}

// Invalid replies get a corrective message; the next good reply is accepted.
func TestStructuredCorrectsInvalidReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		schema    llm.Schema
		bad       string
		truncated bool // finish_reason length
		good      any
		wantError string // in the corrective message
	}{
		{"not JSON", llm.PlanSchema, "I think you should sum the column.", false, testPlan, "no JSON object"},
		{"broken JSON", llm.PlanSchema, `{"description": "d", "approach": }`, false, testPlan, "invalid JSON"},
		{"missing field", llm.PlanSchema, `{"description": "d"}`, false, testPlan, `missing required field "approach"`},
		{"wrong kind", llm.PlanSchema, `{"description": 1, "approach": "a"}`, false, testPlan, `field "description": want string, got number`},
		{
			"bad enum in nested item", llm.DiagnosisSchema,
			`{"failures": [{"test_name": "t", "error_message": "e", "expected_behavior": "x", "actual_behavior": "y", "root_cause": "r", "suggested_fix": "f", "error_type": "Logic"}], "needs_packages": [], "needs_system_packages": []}`,
			false,
			messages.Diagnosis{Failures: []messages.Failure{{TestName: "t", ErrorType: messages.ErrorLogic}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}},
			`field "failures[0].error_type": "Logic" is not one of`,
		},
		{
			"truncated beyond repair", llm.SolutionSchema,
			`{"language": "python", "code": "import pandas as pd\ndef f(`, true,
			messages.Solution{Language: "python", Code: "print(1)", Packages: []string{}, SystemPackages: []string{}},
			`cut off`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, c, _ := setup(t, nil, nil)
			bad := fakellm.Text(tt.bad)
			if tt.truncated {
				bad = fakellm.Truncated(tt.bad)
			}
			s.On(tt.schema.Name, bad.Usage(100, 10), fakellm.JSON(tt.good).Usage(150, 20))
			req := planRequest("m")
			req.Schema = tt.schema
			reply, err := c.Structured(t.Context(), req)
			if err != nil {
				t.Fatalf("Structured: %v", err)
			}
			if !jsonEqual(t, reply.JSON, []byte(mustJSON(t, tt.good))) {
				t.Errorf("reply = %s, want %s", reply.JSON, mustJSON(t, tt.good))
			}
			if diff := cmp.Diff(messages.Usage{InputTokens: 250, OutputTokens: 30, Calls: 2}, reply.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("got %d requests, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			if len(msgs) != 4 {
				t.Fatalf("corrective request has %d messages, want 4", len(msgs))
			}
			if msgs[2].Role != "assistant" || msgs[2].Content != tt.bad {
				t.Errorf("message 3 = %+v, want the bad reply as assistant", msgs[2])
			}
			fix := msgs[3]
			prefix := "Your reply was not valid JSON for schema " + tt.schema.Name + ": "
			if fix.Role != "user" || !strings.Contains(fix.Content, prefix) ||
				!strings.Contains(fix.Content, tt.wantError) || !strings.Contains(fix.Content, "Reply with only the JSON object.") {
				t.Errorf("corrective message = %q; want %q ... %q ... Reply with only the JSON object.", fix.Content, prefix, tt.wantError)
			}
		})
	}
}

func TestStructuredAlwaysInvalid(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, nil, nil)
	s.On("plan", fakellm.Text(`{"description": "only this"}`))

	reply, err := c.Structured(t.Context(), planRequest("m"))
	if !errors.Is(err, llm.ErrInvalidReply) {
		t.Fatalf("err = %v, want ErrInvalidReply", err)
	}
	if !strings.Contains(err.Error(), `missing required field "approach"`) || !strings.Contains(err.Error(), "3 replies") {
		t.Errorf("err = %q, want the cause and the number of replies", err)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("got %d requests, want 3 (one and two corrections)", n)
	}
	if reply.Usage.Calls != 3 || reply.Raw != `{"description": "only this"}` {
		t.Errorf("reply = %+v; want usage of 3 calls and the last raw reply", reply)
	}
}

func TestStructuredCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	// The real clock, with a backoff far longer than the test may take: only
	// cancellation can end the wait.
	s, c, _ := setup(t, nil, func(cfg *llm.OpenAIConfig) {
		cfg.Clock = nil
		cfg.InitialBackoff = time.Hour
		cfg.MaxBackoff = time.Hour
	})
	failed := make(chan struct{})
	var once sync.Once
	s.Handle(func(fakellm.Request) fakellm.Reply {
		once.Do(func() { close(failed) })
		return fakellm.Status(503, "")
	})

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Structured(ctx, planRequest("m"))
		errc <- err
	}()
	<-failed
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestStructuredRequestTimeoutRetried(t *testing.T) {
	t.Parallel()
	s, c, clock := setup(t, nil, func(cfg *llm.OpenAIConfig) { cfg.RequestTimeout = 500 * time.Millisecond })
	s.On("plan", fakellm.JSON(testPlan).Delay(time.Hour), fakellm.JSON(testPlan))

	if _, err := c.Structured(t.Context(), planRequest("m")); err != nil {
		t.Fatalf("Structured: %v", err)
	}
	// Normally 2 requests and 1 wait; on a very slow machine an attempt may
	// time out before the server sees it, so only the relation is checked.
	if n, w := len(s.Requests()), len(clock.Waits()); n < 2 || w < n-1 {
		t.Errorf("%d requests, %d waits; want at least 2 requests and a wait before each retry", n, w)
	}
}

func TestStructuredConcurrent(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, []fakellm.Option{fakellm.RefuseJSONSchema()}, nil)
	s.On("plan", fakellm.JSON(testPlan).Delay(5*time.Millisecond).Usage(10, 5))
	s.On("tests", fakellm.JSON(messages.Tests{Code: "def test_x(): pass"}).Delay(5*time.Millisecond))

	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := planRequest(fmt.Sprintf("model-%d", i%3))
			if i%2 == 1 {
				req.Schema = llm.TestsSchema
			}
			reply, err := c.Structured(t.Context(), req)
			switch {
			case err != nil:
				errs <- err
			case i%2 == 0 && reply.Usage != (messages.Usage{InputTokens: 10, OutputTokens: 5, Calls: 1}):
				errs <- fmt.Errorf("call %d usage %+v", i, reply.Usage)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, r := range s.Requests() {
		if r.Format == fakellm.FormatJSONObject && r.SchemaName != "plan" && r.SchemaName != "tests" {
			t.Errorf("request routed to %q", r.SchemaName)
		}
	}
}

func TestStructuredRejectsBadRequests(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t, nil, nil)
	for name, req := range map[string]llm.StructuredRequest{
		"no model":   {Schema: llm.PlanSchema},
		"no schema":  {Model: "m"},
		"bad schema": {Model: "m", Schema: llm.Schema{Name: "x", Schema: json.RawMessage(`[`)}},
	} {
		if _, err := c.Structured(t.Context(), req); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

func TestChatToolCalls(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, nil, nil)
	s.On(fakellm.NoSchema,
		fakellm.ToolCalls(fakellm.Call("write_file", map[string]string{"path": "solution.py", "content": "print(1)"})),
		fakellm.Text("All tests pass."))

	tools := []llm.Tool{
		{Name: "write_file", Description: "Write a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
		{Name: "run_tests", Description: "Run pytest."},
	}
	conv := []llm.ChatMessage{{Role: "user", Content: "Write solution.py."}}
	first, err := c.Chat(t.Context(), llm.ChatRequest{Model: "m", Messages: conv, Tools: tools})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "write_file" || first.FinishReason != "tool_calls" {
		t.Fatalf("first reply = %+v, want one write_file call", first)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(first.ToolCalls[0].Arguments), &args); err != nil || args["path"] != "solution.py" {
		t.Errorf("arguments = %q (%v)", first.ToolCalls[0].Arguments, err)
	}

	conv = append(conv,
		llm.ChatMessage{Role: "assistant", ToolCalls: first.ToolCalls},
		llm.ChatMessage{Role: "tool", ToolCallID: first.ToolCalls[0].ID, Content: "wrote 8 bytes"})
	second, err := c.Chat(t.Context(), llm.ChatRequest{Model: "m", Messages: conv, Tools: tools})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if second.Content != "All tests pass." || len(second.ToolCalls) != 0 {
		t.Errorf("second reply = %+v, want content and no tool calls", second)
	}

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	if got := []string{reqs[0].Tools[0].Name, reqs[0].Tools[1].Name}; !cmp.Equal(got, []string{"write_file", "run_tests"}) {
		t.Errorf("tools sent = %v", got)
	}
	if !jsonEqual(t, reqs[0].Tools[1].Parameters, []byte(`{"type":"object","properties":{}}`)) {
		t.Errorf("run_tests parameters = %s, want an empty object schema", reqs[0].Tools[1].Parameters)
	}
	m := reqs[1].Messages
	if m[1].ToolCalls[0].ID != first.ToolCalls[0].ID || m[2].ToolCallID != first.ToolCalls[0].ID {
		t.Errorf("tool call IDs not carried through: %+v", m)
	}
}

func TestNewOpenAIValidatesConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]llm.OpenAIConfig{
		"relative base URL": {BaseURL: "localhost:8000/v1"},
		"ftp base URL":      {BaseURL: "ftp://example.com/v1"},
		"negative backoff":  {InitialBackoff: -time.Second},
		"negative timeout":  {RequestTimeout: -time.Second},
		"initial above max": {InitialBackoff: time.Minute, MaxBackoff: time.Second},
	} {
		if _, err := llm.NewOpenAI(cfg); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	if _, err := llm.NewOpenAI(llm.OpenAIConfig{}); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Errorf("%s: %v", a, err)
		return false
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Errorf("%s: %v", b, err)
		return false
	}
	return cmp.Equal(va, vb)
}

// TestSamplingSent: a job's sampling settings go with every structured and
// chat call; a temperature of 0 arrives as (nearly) 0, not as the server's
// default, and not so near that a server dividing by it overflows
// (llama.cpp below about 1e-38); without settings none is sent.
func TestSamplingSent(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, nil, nil)
	s.On("plan", fakellm.JSON(testPlan))
	s.On(fakellm.NoSchema, fakellm.Text("done"))
	zero, topP, seed := 0.0, 0.9, int64(7)
	req := planRequest("gpt-4.1")
	req.MaxTokens, req.Sampling = 300, llm.Sampling{Temperature: &zero, TopP: &topP, Seed: &seed}
	if _, err := c.Structured(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat(t.Context(), llm.ChatRequest{Model: "gpt-4.1", Messages: []llm.ChatMessage{{Role: "user", Content: "hi"}},
		Sampling: llm.Sampling{Temperature: &topP, Seed: &seed}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Structured(t.Context(), planRequest("gpt-4.1")); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Temperature == nil || *r.Temperature > 1e-5 || *r.Temperature < 1e-9 || r.TopP == nil || float32(*r.TopP) != float32(0.9) || r.Seed == nil || *r.Seed != 7 || r.MaxTokens != 300 {
		t.Errorf("structured request: temperature %v top_p %v seed %v max_tokens %d", deref(r.Temperature), deref(r.TopP), r.Seed, r.MaxTokens)
	}
	if r := reqs[1]; r.Temperature == nil || float32(*r.Temperature) != float32(0.9) || r.Seed == nil || r.TopP != nil {
		t.Errorf("chat request: temperature %v top_p %v seed %v", deref(r.Temperature), deref(r.TopP), r.Seed)
	}
	if r := reqs[2]; r.Temperature != nil || r.TopP != nil || r.Seed != nil {
		t.Errorf("a call without settings sent temperature %v top_p %v seed %v", deref(r.Temperature), deref(r.TopP), r.Seed)
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// TestRouter: two models of a table reach two endpoints with their own
// keys, under the names the endpoints know them by; each call is priced
// from the table, and its calls are counted, under the table's name (so
// cost and calls join in the metrics); an unknown model and a prompt past a model's context
// fail at once, permanently.
func TestRouter(t *testing.T) {
	t.Parallel()
	a, b := fakellm.New(), fakellm.New()
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	a.On("plan", fakellm.JSON(testPlan).Usage(1000, 500))
	b.On("plan", fakellm.JSON(testPlan).Usage(2000, 100))
	tb := &modeltable.Table{Default: "big", Models: []modeltable.Model{
		{Name: "big", BaseURL: a.URL(), Key: "key-a", InputPrice: 2, OutputPrice: 8},
		{Name: "small", Remote: "qwen-7b", BaseURL: b.URL(), Key: "key-b", InputPrice: 0.5, ContextTokens: 100},
	}}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	var seen []string
	obs := &modelNames{}
	r, err := llm.NewRouter(tb, llm.OpenAIConfig{HTTPClient: &http.Client{Transport: tr}, Observer: obs}, func(m, stage string, u messages.Usage) {
		seen = append(seen, fmt.Sprintf("%s:%s:%g", m, stage, u.Cost))
	})
	if err != nil {
		t.Fatal(err)
	}
	big, err := r.Structured(t.Context(), planRequest(""))
	if err != nil || big.Usage.Cost != 0.006 {
		t.Fatalf("default model: %v, usage %+v", err, big.Usage)
	}
	small, err := r.Structured(llm.WithStage(t.Context(), "plan"), planRequest("small"))
	if err != nil || small.Usage.Cost != 0.001 {
		t.Fatalf("small: %v, usage %+v", err, small.Usage)
	}
	if ra, rb := a.Requests(), b.Requests(); len(ra) != 1 || len(rb) != 1 || ra[0].APIKey != "key-a" || rb[0].APIKey != "key-b" ||
		ra[0].Model != "big" || rb[0].Model != "qwen-7b" {
		t.Errorf("requests: %d to a, %d to b", len(ra), len(rb))
	}
	if strings.Join(seen, ",") != "big:none:0.006,small:plan:0.001" {
		t.Errorf("usage seen: %v", seen)
	}
	if got := strings.Join(obs.names(), ","); got != "big:none,small:plan" {
		t.Errorf("calls observed as %s, want big:none,small:plan (the table's names, as cost is)", got)
	}
	_, err = r.Structured(t.Context(), planRequest("huge"))
	if !errors.Is(err, llm.ErrUnknownModel) || !llm.IsPermanent(err) || !strings.Contains(err.Error(), "big, small") {
		t.Errorf("unknown model: %v", err)
	}
	long := planRequest("small")
	long.Messages[1].Content = strings.Repeat("x", 1000)
	if _, err := r.Structured(t.Context(), long); !errors.Is(err, llm.ErrPromptTooLong) || !llm.IsPermanent(err) {
		t.Errorf("long prompt: %v", err)
	}
	if len(b.Requests()) != 1 {
		t.Error("a refused call reached the endpoint")
	}
}

// modelNames is an llm.Observer that keeps the model and stage of each call.
type modelNames struct {
	mu   sync.Mutex
	seen []string
}

func (o *modelNames) CallDone(model, stage, _ string, _ time.Duration, _, _ int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, model+":"+stage)
}

func (o *modelNames) InvalidReply(string, string) {}

func (o *modelNames) names() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// TestRouterOpenTableLabels: an open table (no model table configured)
// sends any valid name to its default's endpoint under that name, but
// counts and prices every name it does not list under llm.OtherModels, so
// names a submitter invents cannot make metric series without bound.
func TestRouterOpenTableLabels(t *testing.T) {
	t.Parallel()
	srv := fakellm.New()
	t.Cleanup(srv.Close)
	srv.On("plan", fakellm.JSON(testPlan).Usage(10, 10))
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	obs := &modelNames{}
	var priced []string
	r, err := llm.NewRouter(modeltable.Single("gpt-x", srv.URL(), "key"), llm.OpenAIConfig{HTTPClient: &http.Client{Transport: tr}, Observer: obs},
		func(m, _ string, _ messages.Usage) { priced = append(priced, m) })
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "invented-1", "invented-2"} {
		if _, err := r.Structured(t.Context(), planRequest(name)); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
	}
	sent := srv.Requests()
	if len(sent) != 3 || sent[1].Model != "invented-1" || sent[2].Model != "invented-2" {
		t.Errorf("the endpoint heard %d requests (%+v); want the names as sent", len(sent), sent)
	}
	want := "gpt-x:none," + llm.OtherModels + ":none," + llm.OtherModels + ":none"
	if got := strings.Join(obs.names(), ","); got != want {
		t.Errorf("calls observed as %s, want %s", got, want)
	}
	if got := strings.Join(priced, ","); got != "gpt-x,"+llm.OtherModels+","+llm.OtherModels {
		t.Errorf("priced as %s", got)
	}
}

// TestChatEmptyMessages: a conversation may hold messages with no text (a
// tool's empty result, read_file of an empty packages.txt; a final reply
// with neither text nor tool calls). The API refuses such a message with a
// 400, which fails the stage for good, so Chat sends what it means
// instead: the tool result says it is empty, the empty turn is left out.
func TestChatEmptyMessages(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t, nil, nil)
	s.On(fakellm.NoSchema, fakellm.Text("done"))
	call := llm.ToolCall{ID: "c1", Name: "read_file", Arguments: `{"path":"packages.txt"}`}
	conv := []llm.ChatMessage{
		{Role: "user", Content: "Write solution.py."},
		{Role: "assistant", ToolCalls: []llm.ToolCall{call}},
		{Role: "tool", ToolCallID: "c1", Content: ""},
		{Role: "assistant", Content: ""},
		{Role: "user", Content: "The acceptance run failed; fix it."},
	}
	if _, err := c.Chat(t.Context(), llm.ChatRequest{Model: "m", Messages: conv}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	sent := s.Requests()[0].Messages
	if len(sent) != 4 || sent[2].Role != "tool" || sent[2].Content == "" || sent[3].Role != "user" {
		t.Errorf("messages sent: %+v; want the empty tool result said and the empty turn left out", sent)
	}
}
