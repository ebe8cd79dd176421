package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestHTTPAPI: the coordinator's HTTP surface serves a job's result, its
// progress as Server-Sent Events, health and Prometheus metrics.
func TestHTTPAPI(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	reg := prometheus.NewRegistry()
	m := metrics.NewBuilderOn(reg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: testConfig(t, fake), Roles: []wiring.Role{wiring.RoleLocal}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const token = "e2e-read-token-0123456789"
	tokens, err := httpapi.ParseTokens(strings.NewReader("ui:read:" + token))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(st.Client, m.Handler(), httpapi.Options{Tokens: tokens}))
	defer srv.Close()
	do := func(method, path, token string) (*http.Response, error) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			return nil, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return http.DefaultClient.Do(req)
	}

	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, answerSpec()); err != nil {
		t.Fatal(err)
	}
	// Follow the job over SSE while it runs, as the web UI does: a ticket
	// from the token, then EventSource's plain GET with the ticket.
	tr, err := do("POST", "/v1/jobs/"+id+"/ticket", token)
	if err != nil {
		t.Fatal(err)
	}
	var ticket struct{ Ticket string }
	if err := json.NewDecoder(tr.Body).Decode(&ticket); err != nil || tr.StatusCode != 200 || ticket.Ticket == "" {
		t.Fatalf("ticket: %d %v %+v", tr.StatusCode, err, ticket)
	}
	tr.Body.Close()
	eventsURL := "/v1/jobs/" + id + "/events?ticket=" + ticket.Ticket
	resp, err := do("GET", eventsURL, "")
	for i := 0; err == nil && resp.StatusCode == http.StatusNotFound && i < 100; i++ {
		resp.Body.Close() // the coordinator has not stored the job yet
		time.Sleep(50 * time.Millisecond)
		resp, err = do("GET", eventsURL, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var events []string
	var last string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, name)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			last = data
		}
	}
	if len(events) == 0 || events[len(events)-1] != "result" || !contains(events, "stage_finished") || !contains(events, "job_finished") {
		t.Fatalf("events %v", events)
	}
	var res messages.Result
	if err := json.Unmarshal([]byte(last), &res); err != nil || !res.Success {
		t.Fatalf("last SSE data is not a successful result: %v %s", err, last)
	}

	get := func(path string) (int, string) {
		r, err := do("GET", path, token)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := get("/v1/jobs/" + id); code != 200 || !strings.Contains(body, `"success":true`) {
		t.Errorf("GET job: %d %s", code, body)
	}
	if code, _ := get("/v1/jobs/job-nope/result"); code != 404 {
		t.Errorf("unknown job: %d", code)
	}
	if code, _ := get("/v1/jobs/bad.id/result"); code != 400 {
		t.Errorf("bad id: %d", code)
	}
	if code, body := get("/v1/jobs"); code != 200 || !strings.Contains(body, `"job_id":"`+id+`"`) || !strings.Contains(body, `"status":"succeeded"`) {
		t.Errorf("GET /v1/jobs: %d %s", code, body)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, "<title>autocoder</title>") || !strings.Contains(body, `src="ui/app.js"`) {
		t.Errorf("GET /: %d, %d bytes", code, len(body))
	}
	// The page's modules follow a running job with EventSource.
	if code, body := get("/ui/job.js"); code != 200 || !strings.Contains(body, "new EventSource(") {
		t.Errorf("GET /ui/job.js: %d, %d bytes", code, len(body))
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", code, body)
	}
	for _, path := range []string{"/v1/jobs", "/v1/jobs/" + id, "/v1/jobs/" + id + "/result", "/v1/jobs/" + id + "/events", "/metrics"} {
		r, err := do("GET", path, "")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d, want 401", path, r.StatusCode)
		}
	}
	if r, err := do("GET", "/v1/jobs/"+id+"/events?ticket="+ticket.Ticket[:len(ticket.Ticket)-4]+"AAAA", ""); err != nil {
		t.Fatal(err)
	} else if r.Body.Close(); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET events with a forged ticket: %d, want 401", r.StatusCode)
	}
	_, metrics := get("/metrics")
	for _, m := range []string{"autocoder_jobs_finished_total", "autocoder_stage_results_total", "autocoder_bus_messages_total", "autocoder_job_duration_seconds"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
