package httpapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/autocoder/autocoder/internal/config"
)

const (
	readToken   = "read-token-0123456789"
	submitToken = "submit-token-0123456789"
)

func testTokens(t *testing.T) *Tokens {
	t.Helper()
	tok, err := ParseTokens(strings.NewReader("# the UI\nread " + readToken + "\nci:submit:" + submitToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestScopes is the one table of who passes which scope check: a read token
// never passes a submit check; a submit token also reads.
func TestScopes(t *testing.T) {
	t.Parallel()
	a := &access{Options: Options{Tokens: testTokens(t)}}
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }
	tests := []struct {
		token string
		scope Scope
		want  int
	}{
		{readToken, ScopeRead, http.StatusNoContent},
		{readToken, ScopeSubmit, http.StatusForbidden},
		{submitToken, ScopeSubmit, http.StatusNoContent},
		{submitToken, ScopeRead, http.StatusNoContent},
		{"", ScopeRead, http.StatusUnauthorized},
		{"", ScopeSubmit, http.StatusUnauthorized},
		{"wrong-token-0123456789", ScopeRead, http.StatusUnauthorized},
		{readToken + "x", ScopeRead, http.StatusUnauthorized},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		a.require(tc.scope, ok)(w, r)
		if w.Code != tc.want {
			t.Errorf("token %q, scope %s: %d, want %d", tc.token, tc.scope, w.Code, tc.want)
		}
		if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: 401 without WWW-Authenticate", tc.token)
		}
	}
}

func TestParseTokensErrors(t *testing.T) {
	t.Parallel()
	secret := "s3cr3t-0123456789abcdef"
	tests := []struct{ name, file, wantErr string }{
		{"empty", "# nothing\n\n", "no tokens"},
		{"unknown scope", "admin " + secret, `line 1: scope "admin"`},
		{"short token", "read short", "shorter than 16"},
		{"three words", "read " + secret + " extra", `want "scope token"`},
		{"duplicate", "read " + secret + "\nci:submit:" + secret, "line 2: the same token is listed twice"},
		{"empty scope", "ci::" + secret, `scope ""`},
	}
	for _, tc := range tests {
		_, err := ParseTokens(strings.NewReader(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.wantErr)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows the token: %v", tc.name, err)
		}
	}
}

func TestParseTokensForms(t *testing.T) {
	t.Parallel()
	tok, err := ParseTokens(strings.NewReader("read,submit  both-0123456789abcdef\r\nweb:read:with:colons:0123456789\n"))
	if err != nil {
		t.Fatal(err)
	}
	if name, _, ok := tok.Check("both-0123456789abcdef", ScopeSubmit); !ok || name != "line 1" {
		t.Errorf("read,submit token: name %q, submit %v", name, ok)
	}
	if name, _, ok := tok.Check("with:colons:0123456789", ScopeRead); !ok || name != "web" {
		t.Errorf("name:scope:token with colons in the token: name %q, read %v", name, ok)
	}
	if _, known, _ := (*Tokens)(nil).Check("x", ScopeRead); known {
		t.Error("nil Tokens know a token")
	}
}

// TestHandlerAccess: /healthz and the page are open, /metrics takes read,
// a Host that is not ours is refused, and no tokens at all fails closed.
func TestHandlerAccess(t *testing.T) {
	t.Parallel()
	reg := promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})
	protected := Handler(nil, reg, Options{Tokens: testTokens(t), AllowedHosts: []string{"coordinator.internal"}})
	closed := Handler(nil, reg, Options{})
	open := Handler(nil, reg, Options{Open: true})
	tests := []struct {
		name  string
		h     http.Handler
		path  string
		host  string
		token string
		want  int
	}{
		{"healthz needs no token", protected, "/healthz", "", "", 200},
		{"the page needs no token", protected, "/", "", "", 200},
		{"metrics need a token", protected, "/metrics", "", "", 401},
		{"metrics with read", protected, "/metrics", "", readToken, 200},
		{"a rebound name", protected, "/metrics", "evil.example:8080", readToken, http.StatusMisdirectedRequest},
		{"a rebound name, page", protected, "/", "evil.example", "", http.StatusMisdirectedRequest},
		{"healthz by any name", protected, "/healthz", "evil.example", "", 200},
		{"an allowed name", protected, "/metrics", "Coordinator.Internal:8080", readToken, 200},
		{"localhost", protected, "/metrics", "localhost:8080", readToken, 200},
		{"an IPv6 literal", protected, "/metrics", "[::1]:8080", readToken, 200},
		{"an IP literal", protected, "/metrics", "10.1.2.3", readToken, 200},
		{"no tokens fails closed", closed, "/metrics", "", readToken, 401},
		{"auth none", open, "/metrics", "", "", 200},
		{"auth none still checks Host", open, "/metrics", "evil.example", "", http.StatusMisdirectedRequest},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", tc.path, nil)
		r.Host = "127.0.0.1:8080"
		if tc.host != "" {
			r.Host = tc.host
		}
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		tc.h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: GET %s: %d, want %d (%s)", tc.name, tc.path, w.Code, tc.want, w.Body)
		}
	}
}

func TestTickets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	tk := newTickets()
	tk.now = func() time.Time { return now }
	ticket, exp := tk.issue("job-1")
	if !exp.After(now) {
		t.Fatalf("expires %v, not after %v", exp, now)
	}
	if !tk.valid(ticket, "job-1") {
		t.Error("a fresh ticket is not valid")
	}
	if tk.valid(ticket, "job-2") {
		t.Error("a ticket opens another job's events")
	}
	if newTickets().valid(ticket, "job-1") {
		t.Error("a ticket from another key is valid")
	}
	// One character of the MAC changed, to another than it was. (The test
	// once wrote "AA" over the last two: one ticket in 4096 ends so, and
	// the last character's low bits are padding a decoder ignores.)
	forged := []byte(ticket)
	if forged[20] == 'A' {
		forged[20] = 'B'
	} else {
		forged[20] = 'A'
	}
	if tk.valid(string(forged), "job-1") || tk.valid("", "job-1") || tk.valid("!!", "job-1") {
		t.Error("a forged ticket is valid")
	}
	now = exp
	if tk.valid(ticket, "job-1") {
		t.Error("an expired ticket is valid")
	}
}

func TestFromConfig(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := config.Config{HTTPAuth: config.HTTPAuthToken}
	if _, err := FromConfig(cfg, "127.0.0.1:8080", log); !errors.Is(err, ErrNoTokens) {
		t.Fatalf("no tokens: err = %v, want ErrNoTokens", err)
	}
	if strings.Contains(ErrNoTokens.Error(), "\n") {
		t.Error("ErrNoTokens is more than one line")
	}
	if o, err := MetricsFromConfig(cfg, "127.0.0.1:0", log); err != nil || !o.Open {
		t.Errorf("a worker's metrics without tokens: open %v, err %v; want open", o.Open, err)
	}

	cfg.HTTPAuth = config.HTTPAuthNone
	o, err := FromConfig(cfg, "coordinator:8080", log)
	if err != nil || !o.Open {
		t.Fatalf("auth none: open %v, err %v", o.Open, err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "AUTOCODER_HTTP_AUTH=none") {
		t.Errorf("auth none is not logged as a warning: %s", logs.String())
	}
	if h := (&access{Options: o}); !h.hostAllowed("coordinator:8080") {
		t.Error("the listen host is not allowed")
	}

	cfg.HTTPAuth, cfg.HTTPTokensFile = config.HTTPAuthToken, filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(cfg.HTTPTokensFile, []byte("read "+readToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err = FromConfig(cfg, "127.0.0.1:8080", log)
	if err != nil || o.Open || o.Tokens == nil {
		t.Fatalf("tokens file: %+v, %v", o, err)
	}
	if _, _, ok := o.Tokens.Check(readToken, ScopeRead); !ok {
		t.Error("the file's token is not accepted")
	}
	if strings.Contains(logs.String(), "readable by other users") {
		t.Error("a 0600 tokens file is reported as readable by others")
	}
	if err := os.Chmod(cfg.HTTPTokensFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromConfig(cfg, "127.0.0.1:8080", log); err != nil || !strings.Contains(logs.String(), "readable by other users") {
		t.Errorf("a 0644 tokens file: err %v, no warning in %s", err, logs.String())
	}
	if strings.Contains(logs.String(), readToken) {
		t.Error("the log shows a token")
	}
}

// TestOpenRoutes: the routes without a scope are the page, /healthz, and
// events, which checks a token or a ticket itself; a new route left without
// one fails here.
func TestOpenRoutes(t *testing.T) {
	t.Parallel()
	var open []string
	for _, rt := range routes {
		if rt.scope == "" {
			open = append(open, rt.pattern)
		}
	}
	want := []string{"GET /{$}", "GET /healthz", "GET /ui/{file}", "GET /v1/jobs/{id}/events"}
	if strings.Join(open, ",") != strings.Join(want, ",") {
		t.Errorf("routes without a scope: %q, want %q", open, want)
	}
}
