package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestAgentToolCallsOverHTTP: every tool call of an agent job is a
// tool_call event on the HTTP API's event stream, with the tool, its
// argument summary, its verdict and its duration.
func TestAgentToolCallsOverHTTP(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On(fakellm.NoSchema,
		fakellm.ToolCalls(writeCall("solution.py", code("6 * 7")), writeCall("test_solution.py", answerTests),
			bashCall("wget http://example.com/x"), call(messages.ToolRunTests, map[string]any{})),
		fakellm.Text("done"))
	st := startLocal(t, testConfig(t, fake))
	res, _ := runAgentJob(t, st, agentSpec(0))
	if !res.Success {
		t.Fatalf("job failed: %s", res.Error)
	}
	const token = "e2e-agent-read-token-0123456789"
	tokens, err := httpapi.ParseTokens(strings.NewReader("ui:read:" + token))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(st.Client, nil, httpapi.Options{Tokens: tokens}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/jobs/"+res.JobID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET events: %d", resp.StatusCode)
	}
	var calls []messages.ToolCallRecord
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && event == string(messages.EventToolCall) {
			var e messages.Event
			if err := json.Unmarshal([]byte(data), &e); err != nil || e.Tool == nil {
				t.Fatalf("tool_call event %s: %v", data, err)
			}
			calls = append(calls, *e.Tool)
		}
	}
	var got []string
	for _, c := range calls {
		got = append(got, c.Tool+" "+c.Arguments+" "+c.Verdict)
	}
	want := []string{fmt.Sprintf("write_file solution.py (%d bytes) ok", len(code("6 * 7"))),
		fmt.Sprintf("write_file test_solution.py (%d bytes) ok", len(answerTests)),
		"bash wget http://example.com/x denied", "run_tests  ok"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool_call events %q, want %q", got, want)
	}
}
