package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// serve sends one request to h and returns the answer.
func serve(h http.Handler, method, path, host, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.Host = host
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestErrorsAreJSON: every error answer, whichever check refuses the
// request, is the one JSON error body with its code.
func TestErrorsAreJSON(t *testing.T) {
	t.Parallel()
	h := Handler(nil, nil, Options{Tokens: testTokens(t), Ready: func(context.Context) error { return errors.New("nats: not connected") }})
	tests := []struct {
		method, path, host, token string
		status                    int
		code                      string
	}{
		{"GET", "/v1/whoami", "127.0.0.1", "", http.StatusUnauthorized, messages.CodeUnauthorized},
		{"GET", "/v1/whoami", "evil.example", readToken, http.StatusMisdirectedRequest, messages.CodeMisdirected},
		{"GET", "/v1/nothing/here", "127.0.0.1", readToken, http.StatusNotFound, messages.CodeNotFound},
		{"DELETE", "/v1/openapi.json/x", "127.0.0.1", "", http.StatusNotFound, messages.CodeNotFound},
		{"GET", "/ui/nothing.js", "127.0.0.1", "", http.StatusNotFound, messages.CodeNotFound},
		{"GET", "/readyz", "127.0.0.1", "", http.StatusServiceUnavailable, messages.CodeNotReady},
	}
	for _, tc := range tests {
		w := serve(h, tc.method, tc.path, tc.host, tc.token)
		var body messages.HTTPError
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != tc.status || body.Code != tc.code || body.Error == "" ||
			w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %q %s, want %d with code %s", tc.method, tc.path, w.Code, w.Header().Get("Content-Type"), w.Body, tc.status, tc.code)
		}
	}
	if w := serve(h, "GET", "/readyz", "127.0.0.1", ""); !strings.Contains(w.Body.String(), "nats: not connected") {
		t.Errorf("/readyz does not say what is not ready: %s", w.Body)
	}
	ok := Handler(nil, nil, Options{Tokens: testTokens(t), Ready: func(context.Context) error { return nil }})
	if w := serve(ok, "GET", "/readyz", "probe.internal", ""); w.Code != http.StatusOK || w.Body.String() != "ok\n" {
		t.Errorf("/readyz of a ready process: %d %q", w.Code, w.Body)
	}
}

// TestWhoami: the caller learns its token's name and scopes; an API
// without authentication grants both.
func TestWhoami(t *testing.T) {
	t.Parallel()
	type me struct {
		Name   string  `json:"name"`
		Scopes []Scope `json:"scopes"`
	}
	for _, tc := range []struct {
		opts  Options
		token string
		want  me
	}{
		{Options{Tokens: testTokens(t)}, readToken, me{"line 2", []Scope{ScopeRead}}},
		{Options{Tokens: testTokens(t)}, submitToken, me{"ci", []Scope{ScopeRead, ScopeSubmit}}},
		{Options{Open: true}, "", me{"anonymous", []Scope{ScopeRead, ScopeSubmit}}},
	} {
		w := serve(Handler(nil, nil, tc.opts), "GET", "/v1/whoami", "127.0.0.1", tc.token)
		var got me
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
			t.Fatalf("whoami: %d %s", w.Code, w.Body)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("whoami (-want +got):\n%s", diff)
		}
	}
}

// TestSummaryQueryParsing: the job list's search, sort and dates are read
// from the query, and a bad one is refused with its parameter named.
func TestSummaryQueryParsing(t *testing.T) {
	t.Parallel()
	q, err := summaryQuery(url.Values{"status": {"cancelled"}, "q": {" Sales "}, "sort": {"tokens"},
		"since": {"2026-11-24"}, "until": {"2026-11-25T06:00:00Z"}, "limit": {"5"}})
	want := client.SummaryQuery{Status: messages.StatusCancelled, Text: "Sales", Sort: client.SortTokens, Limit: 5,
		Since: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)}
	if err != nil || !cmp.Equal(want, q) {
		t.Errorf("summaryQuery: %+v %v, want %+v", q, err, want)
	}
	for field, v := range map[string]url.Values{
		"status": {"status": {"done"}},
		"sort":   {"sort": {"random"}},
		"since":  {"since": {"yesterday"}},
		"until":  {"until": {"2026-13-01"}},
		"q":      {"q": {strings.Repeat("x", maxSearchBytes+1)}},
		"offset": {"offset": {"-1"}},
		"limit":  {"limit": {"x"}},
	} {
		_, err := summaryQuery(v)
		var fe *messages.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%v: %v, want an error naming %s", v, err, field)
		}
	}
}

// TestSlimView: the slim view drops what makes a result large and keeps
// the outcome and the script; the full result is not changed.
func TestSlimView(t *testing.T) {
	t.Parallel()
	full := &messages.Result{JobID: "j", Status: messages.StatusSucceeded, Success: true,
		Outputs: map[string]any{"n": 3}, Solution: &messages.Solution{Code: "print(3)"}, Tests: "def test(): pass",
		ConversationHistory: []messages.ChatMessage{{Role: "user", Content: strings.Repeat("x", 50000)}},
		DataContext:         "ctx", GeneratedSchemas: map[string]string{"s": "schema"}, Output: "pytest output",
		ContextUsed: []messages.StageContext{{Stage: messages.StagePlan}},
		Agent:       &messages.AgentReport{Turns: 3, Trace: []messages.ToolCallRecord{{Tool: "bash"}}},
		CodeMode:    &messages.CodeModeResult{Summary: "done", Events: []messages.CodeModeEvent{{}}},
	}
	s := withView(full, viewSlim)
	if len(s.ConversationHistory) != 0 || s.DataContext != "" || len(s.GeneratedSchemas) != 0 || s.Output != "" ||
		s.ContextUsed != nil || s.Agent.Trace != nil || s.CodeMode.Events != nil {
		t.Errorf("slim kept a large part: %+v", s)
	}
	if s.Solution.Code != "print(3)" || s.Tests == "" || s.Outputs["n"] != 3 || s.Agent.Turns != 3 || s.CodeMode.Summary != "done" || !s.Success {
		t.Errorf("slim lost the outcome: %+v", s)
	}
	if len(full.ConversationHistory) != 1 || len(full.Agent.Trace) != 1 || len(full.CodeMode.Events) != 1 {
		t.Error("slim changed the full result")
	}
	b, _ := json.Marshal(s)
	if len(b) > 2000 {
		t.Errorf("slim is %d bytes", len(b))
	}
	if withView(full, viewFull) != full {
		t.Error("the full view is not the result itself")
	}
}
