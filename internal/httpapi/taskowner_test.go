package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestHTTPTaskOwner: a task registered over HTTP is its token's
// ("http:<token name>"): the same token replaces it, another token is
// refused with 403, and a producer's task is not the HTTP API's to
// replace either, although the API asks on the coordinator role's
// (admin's) subject.
func TestHTTPTaskOwner(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	coord, err := coordinator.New(coordinator.Config{States: be.Resources.JobState, Results: be.Resources.JobResults,
		Publisher: be.Publisher, Resources: be.Resources, JS: be.JS})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, served := make(chan struct{}), make(chan error, 1)
	go func() { served <- coord.ServeAPI(ctx, func() { close(ready) }) }()
	t.Cleanup(func() { cancel(); <-served })
	<-ready
	spec := messages.JobSpec{Prompt: "p"}
	b, _ := json.Marshal(messages.Result{JobID: "job-ok", Success: true, Status: messages.StatusSucceeded, Spec: &spec, Solution: &messages.Solution{Code: "x"}})
	if _, err := be.Resources.JobResults.Put(ctx, bus.JobKey("job-ok"), b); err != nil {
		t.Fatal(err)
	}
	tokens, err := ParseTokens(strings.NewReader("ann:submit:ann-0123456789abcdef\nbob:submit:bob-0123456789abcdef\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(be.JS, be.Resources, be.Publisher)
	srv := httptest.NewServer(Handler(c, nil, Options{Tokens: tokens}))
	t.Cleanup(srv.Close)
	register := func(token, name string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/tasks/"+name, strings.NewReader(`{"job_id":"job-ok"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if status, body := register("ann-0123456789abcdef", "daily"); status != http.StatusCreated || !strings.Contains(body, `"owner":"http:ann"`) {
		t.Fatalf("ann registers: %d %s", status, body)
	}
	if status, body := register("ann-0123456789abcdef", "daily"); status != http.StatusCreated {
		t.Errorf("ann replaces her own: %d %s", status, body)
	}
	if status, body := register("bob-0123456789abcdef", "daily"); status != http.StatusForbidden || !strings.Contains(body, "owned by http:ann") {
		t.Errorf("bob replaces ann's: %d %s, want 403", status, body)
	}
	if _, err := coord.RegisterTask(ctx, messages.TaskRequest{Name: "mine", JobID: "job-ok"}, "nats:carol", false); err != nil {
		t.Fatal(err)
	}
	if status, body := register("ann-0123456789abcdef", "mine"); status != http.StatusForbidden {
		t.Errorf("ann replaces a producer's task: %d %s, want 403", status, body)
	}
}
