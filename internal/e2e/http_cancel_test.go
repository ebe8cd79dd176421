package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestHTTPCancel: POST /v1/jobs/{id}/cancel takes a token with the submit
// scope, cancels the running job through the coordinator and answers with
// the result, which names the token as who cancelled it.
func TestHTTPCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A coordinator without workers: the job waits on its first stage.
	st, err := wiring.Start(ctx, wiring.Options{Config: testConfig(t, nil), Roles: []wiring.Role{wiring.RoleCoordinator}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const readToken, submitToken = "e2e-read-token-0123456789", "e2e-submit-token-0123456789"
	tokens, err := httpapi.ParseTokens(strings.NewReader("ui:read:" + readToken + "\nops:submit:" + submitToken))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(st.Client, nil, httpapi.Options{Tokens: tokens}))
	defer srv.Close()
	post := func(path, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, answerSpec()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the job to start", func() bool {
		r, err := st.Client.Status(ctx, id)
		return err == nil && r.Status == messages.StatusRunning
	})
	path := "/v1/jobs/" + id + "/cancel"
	for _, tc := range []struct {
		token, body string
		want        int
	}{
		{"", "", http.StatusUnauthorized},
		{readToken, "", http.StatusForbidden},
		{submitToken, `{"reason": 3}`, http.StatusBadRequest},
		{submitToken, `{"why": "x"}`, http.StatusBadRequest},
	} {
		if code, body := post(path, tc.token, tc.body); code != tc.want {
			t.Errorf("token %q body %q: %d %s, want %d", tc.token, tc.body, code, body, tc.want)
		}
	}
	if r, _ := st.Client.Status(ctx, id); r.Status != messages.StatusRunning {
		t.Fatalf("a refused request changed the job: %s", r.Status)
	}

	code, body := post(path, submitToken, `{"reason": "wrong data"}`)
	var res messages.Result
	if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil {
		t.Fatalf("cancel: %d %s", code, body)
	}
	if c := res.Cancelled; c == nil || c.By != "http:ops" || c.Reason != "wrong data" || c.At.IsZero() || res.Status != messages.StatusFailed {
		t.Errorf("result: status %s, cancelled %+v", res.Status, res.Cancelled)
	}
	if code, body := post(path, submitToken, ""); code != http.StatusConflict || !strings.Contains(body, `"by":"http:ops"`) {
		t.Errorf("cancel again: %d %s, want 409 with the result", code, body)
	}
	if code, _ := post("/v1/jobs/job-nobody/cancel", submitToken, ""); code != http.StatusNotFound {
		t.Errorf("unknown job: %d, want 404", code)
	}
	if code, _ := post("/v1/jobs/a.b/cancel", submitToken, ""); code != http.StatusBadRequest {
		t.Errorf("bad job id: %d, want 400", code)
	}
}
