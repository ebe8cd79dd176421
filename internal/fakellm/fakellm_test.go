package fakellm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/fakellm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, opts ...fakellm.Option) (*fakellm.Server, *http.Client) {
	t.Helper()
	s := fakellm.New(opts...)
	t.Cleanup(s.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return s, &http.Client{Transport: tr}
}

type response struct {
	status int
	header http.Header
	body   map[string]any
}

func post(t *testing.T, hc *http.Client, s *fakellm.Server, body string) response {
	t.Helper()
	resp, err := hc.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("response %q: %v", raw, err)
	}
	return r
}

// content digs choices[0].message.content and finish_reason out of a response.
func content(t *testing.T, r response) (string, string) {
	t.Helper()
	choices, ok := r.body["choices"].([]any)
	if !ok || len(choices) != 1 {
		t.Fatalf("status %d body %v: want one choice", r.status, r.body)
	}
	ch := choices[0].(map[string]any)
	msg := ch["message"].(map[string]any)
	c, _ := msg["content"].(string)
	return c, ch["finish_reason"].(string)
}

func errorMessage(t *testing.T, r response) string {
	t.Helper()
	e, ok := r.body["error"].(map[string]any)
	if !ok {
		t.Fatalf("status %d body %v: want an error body", r.status, r.body)
	}
	return e["message"].(string)
}

const (
	schemaReq = `{"model": "m", "messages": [{"role": "user", "content": "hi"}],
		"response_format": {"type": "json_schema", "json_schema": {"name": "plan", "strict": true, "schema": {"type": "object"}}}}`
	objectReq = `{"model": "m", "messages": [{"role": "system", "content": "Reply in JSON.\nSchema name: tests\nSchema: {}"}, {"role": "user", "content": "hi"}],
		"response_format": {"type": "json_object"}}`
	textReq = `{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]}], "max_tokens": 7}`
)

func TestRoutesBySchemaName(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On("plan", fakellm.Text("for plan"))
	s.On("tests", fakellm.Text("for tests"))
	s.On(fakellm.NoSchema, fakellm.Text("for chat"))

	for _, tt := range []struct{ body, want string }{
		{schemaReq, "for plan"},
		{objectReq, "for tests"},
		{textReq, "for chat"},
	} {
		if got, _ := content(t, post(t, hc, s, tt.body)); got != tt.want {
			t.Errorf("content = %q, want %q", got, tt.want)
		}
	}

	got := s.Requests()
	want := []fakellm.Request{
		{Model: "m", SchemaName: "plan", Format: "json_schema", Schema: json.RawMessage(`{"type": "object"}`), Strict: true,
			Messages: []fakellm.Message{{Role: "user", Content: "hi"}}},
		{Model: "m", SchemaName: "tests", Format: "json_object",
			Messages: []fakellm.Message{{Role: "system", Content: "Reply in JSON.\nSchema name: tests\nSchema: {}"}, {Role: "user", Content: "hi"}}},
		{Model: "m", Format: "text", MaxTokens: 7, Messages: []fakellm.Message{{Role: "user", Content: "hello"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestQueueServesInOrderThenRepeatsLast(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On("plan", fakellm.Text("1"), fakellm.Text("2"))
	var got []string
	for range 4 {
		c, _ := content(t, post(t, hc, s, schemaReq))
		got = append(got, c)
	}
	s.On("plan", fakellm.Text("3")) // appended after the queue ran out
	c, _ := content(t, post(t, hc, s, schemaReq))
	got = append(got, c)
	if diff := cmp.Diff([]string{"1", "2", "2", "2", "3"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestHandleAnswersUnqueuedNames(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	if r := post(t, hc, s, schemaReq); r.status != 400 || !strings.Contains(errorMessage(t, r), `no reply scripted for schema name "plan"`) {
		t.Errorf("unscripted: status %d body %v", r.status, r.body)
	}
	s.Handle(func(r fakellm.Request) fakellm.Reply { return fakellm.Text("handled " + r.SchemaName) })
	s.On("tests", fakellm.Text("queued"))
	if c, _ := content(t, post(t, hc, s, schemaReq)); c != "handled plan" {
		t.Errorf("content = %q, want handled plan", c)
	}
	if c, _ := content(t, post(t, hc, s, objectReq)); c != "queued" {
		t.Errorf("content = %q, want queued", c)
	}
}

func TestRefuseResponseFormats(t *testing.T) {
	t.Parallel()
	s, hc := start(t, fakellm.RefuseJSONSchema(), fakellm.RefuseJSONObject())
	s.On("plan", fakellm.Text("x"))
	s.On("tests", fakellm.Text("x"))
	for _, body := range []string{schemaReq, objectReq} {
		r := post(t, hc, s, body)
		if r.status != 400 || !strings.Contains(errorMessage(t, r), "response_format") {
			t.Errorf("status %d body %v; want 400 mentioning response_format", r.status, r.body)
		}
	}
	if len(s.Requests()) != 2 {
		t.Errorf("refused requests must still be recorded")
	}
}

func TestJSONObjectNeedsTheWordJSON(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On(fakellm.NoSchema, fakellm.Text("{}"))
	r := post(t, hc, s, `{"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}}`)
	if r.status != 400 || !strings.Contains(errorMessage(t, r), "must contain the word 'json'") {
		t.Errorf("status %d body %v", r.status, r.body)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.Handle(func(fakellm.Request) fakellm.Reply { return fakellm.Text("x") })
	for name, body := range map[string]string{
		"not JSON":      `{`,
		"no model":      `{"messages": [{"role": "user", "content": "hi"}]}`,
		"no messages":   `{"model": "m", "messages": []}`,
		"stream":        `{"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true}`,
		"unknown type":  `{"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "yaml"}}`,
		"schema noname": `{"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema"}}`,
	} {
		if r := post(t, hc, s, body); r.status != 400 {
			t.Errorf("%s: status %d, want 400", name, r.status)
		}
	}
	resp, err := hc.Get(s.URL() + "/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("unknown route: status %d, want 404", resp.StatusCode)
	}
}

func TestStatusReply(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On("plan", fakellm.Status(429, "7"), fakellm.Status(503, "").ErrorMessage("overloaded"))
	r := post(t, hc, s, schemaReq)
	if r.status != 429 || r.header.Get("Retry-After") != "7" || errorMessage(t, r) == "" {
		t.Errorf("status %d Retry-After %q body %v", r.status, r.header.Get("Retry-After"), r.body)
	}
	r = post(t, hc, s, schemaReq)
	if r.status != 503 || errorMessage(t, r) != "overloaded" || r.header.Get("Retry-After") != "" {
		t.Errorf("status %d body %v", r.status, r.body)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On(fakellm.NoSchema, fakellm.Text(strings.Repeat("x", 40)), fakellm.Text("x").Usage(1000, 200))
	want := []map[string]any{
		{"prompt_tokens": 1.0, "completion_tokens": 10.0, "total_tokens": 11.0}, // "hello": 5 chars / 4
		{"prompt_tokens": 1000.0, "completion_tokens": 200.0, "total_tokens": 1200.0},
	}
	for _, w := range want {
		r := post(t, hc, s, textReq)
		if diff := cmp.Diff(w, r.body["usage"]); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
	}
}

// go-openai must read every reply kind, as internal/llm relies on it.
func TestGoOpenAIReadsReplies(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On(fakellm.NoSchema,
		fakellm.Truncated(`{"code": "imp`),
		fakellm.ToolCalls(fakellm.Call("read_file", map[string]string{"path": "a.py"}), fakellm.Call("run_tests", "{}")),
		fakellm.Status(401, ""),
	)
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = s.URL()
	cfg.HTTPClient = hc
	c := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}}

	resp, err := c.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if ch := resp.Choices[0]; ch.Message.Content != `{"code": "imp` || ch.FinishReason != openai.FinishReasonLength {
		t.Errorf("truncated: %+v", ch)
	}

	resp, err = c.CreateChatCompletion(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != openai.FinishReasonToolCalls || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("tool calls: %+v", ch)
	}
	tc := ch.Message.ToolCalls
	if tc[0].Function.Name != "read_file" || tc[0].Function.Arguments != `{"path":"a.py"}` || tc[1].Function.Arguments != "{}" ||
		tc[0].ID == "" || tc[0].ID == tc[1].ID || tc[0].Type != openai.ToolTypeFunction {
		t.Errorf("tool calls: %+v", tc)
	}

	_, err = c.CreateChatCompletion(t.Context(), req)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 401 {
		t.Errorf("err = %v, want an APIError with status 401", err)
	}
	if got := s.Requests()[0].APIKey; got != "k" {
		t.Errorf("API key = %q, want k", got)
	}
}

func TestDropClosesConnection(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On("plan", fakellm.Drop(), fakellm.Text("ok"))
	_, err := hc.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(schemaReq))
	if err == nil {
		t.Fatal("dropped request succeeded")
	}
	if c, _ := content(t, post(t, hc, s, schemaReq)); c != "ok" {
		t.Errorf("content after drop = %q", c)
	}
}

func TestCloseCutsDelaysShort(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	arrived := make(chan struct{})
	s.Handle(func(fakellm.Request) fakellm.Reply {
		close(arrived)
		return fakellm.Text("late").Delay(time.Hour)
	})
	done := make(chan int, 1)
	go func() {
		resp, err := hc.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(textReq))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-arrived
	s.Close() // must not wait an hour
	if code := <-done; code != 0 && code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503 or a closed connection", code)
	}
}

func TestDelayEndsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On(fakellm.NoSchema, fakellm.Text("late").Delay(time.Hour))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(textReq))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hc.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	// Close returning (and the leak check passing) shows the handler ended.
}

func TestModels(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On("plan", fakellm.Text("x"))
	post(t, hc, s, schemaReq)
	resp, err := hc.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"fakellm", "m"}, ids); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}

func TestConcurrentRequestsEachGetOneReply(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	const n = 32
	var replies []fakellm.Reply
	for i := range n {
		replies = append(replies, fakellm.Text(fmt.Sprint(i)))
	}
	s.On("plan", replies...)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []string
	)
	for range n {
		wg.Go(func() {
			resp, err := hc.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(schemaReq))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var body struct {
				Choices []struct {
					Message struct{ Content string } `json:"message"`
				} `json:"choices"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Choices) != 1 {
				t.Errorf("decode: %v", err)
				return
			}
			mu.Lock()
			got = append(got, body.Choices[0].Message.Content)
			mu.Unlock()
		})
	}
	wg.Wait()
	var want []string
	for i := range n {
		want = append(want, fmt.Sprint(i))
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("each reply once (-want +got):\n%s", diff)
	}
	if len(s.Requests()) != n {
		t.Errorf("recorded %d requests, want %d", len(s.Requests()), n)
	}
}

func TestTranscript(t *testing.T) {
	t.Parallel()
	tr, err := fakellm.LoadTranscript(strings.NewReader(`{
		"label": "scripted demo",
		"replies": {
			"plan": [{"description": "d", "approach": "a"}],
			"tests": ["` + "```json\\n{\\\"code\\\": \\\"x\\\"}\\n```" + `", {"code": "y"}]
		}
	}`))
	if err != nil {
		t.Fatalf("LoadTranscript: %v", err)
	}
	if tr.Label != "scripted demo" {
		t.Errorf("label = %q", tr.Label)
	}
	s, hc := start(t)
	s.Play(tr)
	var got []string
	for _, body := range []string{schemaReq, objectReq, objectReq, objectReq} {
		c, _ := content(t, post(t, hc, s, body))
		got = append(got, c)
	}
	want := []string{`{"description":"d","approach":"a"}`, "```json\n{\"code\": \"x\"}\n```", `{"code":"y"}`, `{"code":"y"}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLoadTranscriptRejects(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"not JSON":      `{`,
		"no label":      `{"replies": {"plan": [{}]}}`,
		"unknown field": `{"label": "x", "replies": {"plan": [{}]}, "extra": 1}`,
		"no replies":    `{"label": "x", "replies": {}}`,
		"empty list":    `{"label": "x", "replies": {"plan": []}}`,
		"number reply":  `{"label": "x", "replies": {"plan": [3]}}`,
		"negative":      `{"label": "x", "delay_ms": -1, "replies": {"plan": [{}]}}`,
	} {
		if _, err := fakellm.LoadTranscript(bytes.NewBufferString(doc)); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

// TestReplayFile: a transcript file is served as the model; a file that
// is not there, not a regular file or not a labelled transcript is refused
// with an error naming it.
func TestReplayFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "transcript.json")
	os.WriteFile(good, []byte(`{"label": "scripted demo", "replies": {"plan": [{"description": "d", "approach": "a"}]}}`), 0o644)
	s, label, err := fakellm.ReplayFile(good)
	if err != nil {
		t.Fatalf("ReplayFile: %v", err)
	}
	defer s.Close()
	if label != "scripted demo" {
		t.Errorf("label = %q", label)
	}
	if c, _ := content(t, post(t, http.DefaultClient, s, schemaReq)); c != `{"description":"d","approach":"a"}` {
		t.Errorf("reply = %q", c)
	}
	var pe *fs.PathError
	if _, _, err := fakellm.ReplayFile(filepath.Join(dir, "missing.json")); !errors.As(err, &pe) {
		t.Errorf("missing file: %v, want the *fs.PathError", err)
	}
	unlabelled := filepath.Join(dir, "unlabelled.json")
	os.WriteFile(unlabelled, []byte(`{"replies": {"plan": [{}]}}`), 0o644)
	for path, want := range map[string]string{dir: "not a regular file", "/dev/zero": "not a regular file", unlabelled: "label is required"} {
		if _, _, err := fakellm.ReplayFile(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("ReplayFile(%s) = %v, want an error naming it and saying %q", path, err, want)
		}
	}
}

func TestListenError(t *testing.T) {
	t.Parallel()
	s, _ := start(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/v1")
	if _, err := fakellm.Listen(addr); err == nil {
		t.Error("listening on a port in use succeeded")
	}
}

// TestOversizedReply: Oversized streams a well-formed reply whose content
// has the size asked for.
func TestOversizedReply(t *testing.T) {
	t.Parallel()
	s, hc := start(t)
	s.On("plan", fakellm.Oversized(200<<10))
	r := post(t, hc, s, schemaReq)
	c, finish := content(t, r)
	if r.status != 200 || len(c) != 200<<10 || strings.Trim(c, "x") != "" || finish != "stop" {
		t.Errorf("status %d, content of %d bytes, finish %q; want 200, %d bytes of x, stop", r.status, len(c), finish, 200<<10)
	}
}
