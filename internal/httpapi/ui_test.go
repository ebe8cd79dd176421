package httpapi

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestWithDiffs: each iteration after the first gets a unified diff of its
// code and tests against the one before; unchanged files get none.
func TestWithDiffs(t *testing.T) {
	t.Parallel()
	its := withDiffs([]messages.Iteration{
		{Iteration: 1, Code: "def f():\n    return 6 * 6\n", Tests: "def test_f():\n    assert f() == 42\n"},
		{Iteration: 2, Code: "def f():\n    return 6 * 7\n", Tests: "def test_f():\n    assert f() == 42\n"},
	})
	if its[0].CodeDiff != "" || its[0].TestsDiff != "" || its[1].TestsDiff != "" {
		t.Errorf("diffs where nothing changed: %+v", its)
	}
	for _, want := range []string{"--- iteration 1/solution.py", "+++ iteration 2/solution.py", "-    return 6 * 6\n", "+    return 6 * 7\n", "@@ -1,2 +1,2 @@"} {
		if !strings.Contains(its[1].CodeDiff, want) {
			t.Errorf("the code diff lacks %q:\n%s", want, its[1].CodeDiff)
		}
	}
}

func TestLastEventID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header, query string
		want          uint64
		ok            bool
	}{
		{"", "", 0, true},
		{"17", "", 17, true},
		{"", "23", 23, true},
		{"17", "23", 23, true}, // a page that reconnects itself says where in the URL
		{"x", "", 0, false},
		{"", "-1", 0, false},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", "/v1/jobs/j/events?last_event_id="+tc.query, nil)
		if tc.query == "" {
			r = httptest.NewRequest("GET", "/v1/jobs/j/events", nil)
		}
		if tc.header != "" {
			r.Header.Set("Last-Event-ID", tc.header)
		}
		w := httptest.NewRecorder()
		got, ok := lastEventID(w, r)
		if got != tc.want || ok != tc.ok || (!ok && w.Code != http.StatusBadRequest) {
			t.Errorf("header %q query %q: %d %v (%d), want %d %v", tc.header, tc.query, got, ok, w.Code, tc.want, tc.ok)
		}
	}
}

// TestUIAssets: the page's modules and styles are served with their
// types, open like the page; nothing else is.
func TestUIAssets(t *testing.T) {
	t.Parallel()
	h := Handler(nil, nil, Options{Tokens: testTokens(t)})
	tests := []struct {
		path  string
		code  int
		ctype string
	}{
		{"/ui/app.js", 200, "text/javascript; charset=utf-8"},
		{"/ui/job.js", 200, "text/javascript; charset=utf-8"},
		{"/ui/style.css", 200, "text/css; charset=utf-8"},
		{"/ui/index.html", 404, ""},
		{"/ui/nothing.js", 404, ""},
		{"/ui/..%2fui.go", 404, ""},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("GET", tc.path, nil)
		r.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.code || (tc.ctype != "" && w.Header().Get("Content-Type") != tc.ctype) {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, w.Code, w.Header().Get("Content-Type"), tc.code, tc.ctype)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "127.0.0.1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if !strings.Contains(w.Body.String(), `src="ui/app.js"`) || !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("the page does not load its module under its policy: %s", w.Header().Get("Content-Security-Policy"))
	}
}

func TestSummariesQuery(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"status=done", "limit=x", "offset=-1"} {
		w := httptest.NewRecorder()
		(&api{}).summaries(w, httptest.NewRequest("GET", "/v1/summaries?"+q, nil))
		if w.Code != http.StatusBadRequest {
			t.Errorf("?%s: %d, want 400", q, w.Code)
		}
	}
}

// TestUICallsRelativePaths: every API call of the UI is relative (v1/...),
// so the UI works behind a proxy that serves it under a sub-path; the job
// page's Rerun once posted to /v1/jobs.
func TestUICallsRelativePaths(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(uiFiles, "ui/*.js")
	if err != nil || len(names) == 0 {
		t.Fatalf("ui scripts: %v %v", names, err)
	}
	for _, name := range names {
		b, err := fs.ReadFile(uiFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		if i := strings.Index(string(b), `api("/`); i >= 0 {
			t.Errorf("%s calls an absolute path: %q", name, string(b[i:min(len(b), i+40)]))
		}
	}
}
