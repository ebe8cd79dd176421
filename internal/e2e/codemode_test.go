package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestCodeModeJob: a mode: codemode job through the coordinator, the
// workers, the events and the result store. Its two tools are NATS
// services; the model's first program calls both (one fails, and the
// program handles it), the second reply is the answer.
func TestCodeModeJob(t *testing.T) {
	fake := fakellm.New()
	defer fake.Close()
	fake.On(fakellm.NoSchema,
		fakellm.Text("Let me look.\n```python\ns = stock_level(sku=\"ABC\")\ntry:\n    stock_level(sku=\"NOPE\")\n    bad = None\nexcept ToolError as e:\n    bad = e.message\np = price(sku=\"ABC\")\n{\"units\": s[\"units\"], \"value\": s[\"units\"] * p, \"bad\": bad}\n```"),
		fakellm.Text("ABC: 30 units in stock, worth 75.0; NOPE is not a known SKU."))
	st := startLocal(t, testConfig(t, fake))

	var stockCalls atomic.Int64
	for _, tool := range []codemode.Tool{{
		Name: "stock_level", Doc: "Units in stock of a SKU: {sku, units}.",
		Params: []codemode.Param{{Name: "sku", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			stockCalls.Add(1)
			if args["sku"] == "NOPE" {
				return nil, errors.New("unknown SKU NOPE")
			}
			return map[string]any{"sku": args["sku"], "units": 30}, nil
		},
	}, {
		Name: "price", Doc: "Unit price of a SKU.",
		Params: []codemode.Param{{Name: "sku", Type: codemode.TypeStr, Required: true}},
		Func:   func(context.Context, map[string]any) (any, error) { return 2.5, nil },
	}} {
		svc, err := codemode.ServeTool(st.Conn, tool)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = svc.Stop() }()
	}

	res := runJob(t, st, messages.JobSpec{Mode: messages.ModeCodeMode, CodeModeSpec: messages.CodeModeSpec{
		Message: "How much ABC stock do we have, and what is it worth?", Tools: []string{"stock_level", "price"},
		MaxTurns: 4, Skills: []string{"Prices are in euros."},
	}})
	if !res.Success || res.CodeMode == nil {
		t.Fatalf("job %s: %s (codemode %+v)", res.Status, res.Error, res.CodeMode)
	}
	cm := res.CodeMode
	var value map[string]any
	if err := json.Unmarshal(cm.Value, &value); err != nil {
		t.Fatal(err)
	}
	if value["units"] != 30.0 || value["value"] != 75.0 || value["bad"] != "unknown SKU NOPE" {
		t.Fatalf("value %s", cm.Value)
	}
	if cm.Turns != 2 || !strings.HasPrefix(cm.Summary, "ABC: 30 units") || !strings.Contains(cm.Code, "stock_level(") || len(cm.Events) != 3 {
		t.Fatalf("codemode result %+v", cm)
	}
	if got := strings.Join(stageNames(res), ","); got != "codemode_tools,codemode_turn,codemode_exec,codemode_turn" {
		t.Fatalf("stages %s", got)
	}
	if stockCalls.Load() != 2 {
		t.Fatalf("stock_level called %d times, want 2", stockCalls.Load())
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].Messages[0].Content, "Prices are in euros.") {
		t.Fatalf("%d model requests; the first system prompt lacks the skill", len(reqs))
	}
	obs := reqs[1].Messages[len(reqs[1].Messages)-1].Content
	if !strings.HasPrefix(obs, "Observation:") || !strings.Contains(obs, `"units":30`) {
		t.Fatalf("second request's observation %q", obs)
	}
}

// TestCodeModeJobMissingTool: a tool no process serves fails the job with
// a message naming it, before any model call.
func TestCodeModeJobMissingTool(t *testing.T) {
	fake := fakellm.New()
	defer fake.Close()
	fake.On(fakellm.NoSchema, fakellm.Text("```python\n1\n```"))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, messages.JobSpec{Mode: messages.ModeCodeMode, CodeModeSpec: messages.CodeModeSpec{
		Message: "x", Tools: []string{"no_such_tool"},
	}})
	if res.Success || !strings.Contains(res.Error, "no process serves the tool no_such_tool") || len(fake.Requests()) != 0 {
		t.Fatalf("status %s, error %q, %d model requests", res.Status, res.Error, len(fake.Requests()))
	}
}

// codeModeAcrossProcesses runs a code-mode job on the deployment of
// TestServerBinariesAsSeparateProcesses (every part a process, NATS with
// users): the test serves a tool as the tool-server user, the
// sandbox-worker binary discovers and calls it, the CLI submits with
// `submit codemode` as the producer.
func codeModeAcrossProcesses(ctx context.Context, t *testing.T, submitBin string, env []string, natsURL string, fake *fakellm.Server) {
	t.Helper()
	opts, err := bus.ClientAuth{User: "tools-1", Password: "tools-secret", Role: bus.RoleToolServer}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL, opts...)
	if err != nil {
		t.Fatalf("connect as the tool server: %v", err)
	}
	defer nc.Close()
	svc, err := codemode.ServeTool(nc, codemode.Tool{
		Name: "double", Doc: "Twice n.", Params: []codemode.Param{{Name: "n", Type: codemode.TypeInt, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) { return args["n"].(int64) * 2, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()
	fake.On(fakellm.NoSchema, fakellm.Text("```python\n{\"doubled\": double(n=21)}\n```"), fakellm.Text("Twice 21 is 42."))

	cmd := exec.CommandContext(ctx, submitBin, "codemode", "What is twice 21?", "--tool", "double", "--max-turns", "3", "--json")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("submit codemode: %v\n%s", err, stderr.String())
	}
	var res messages.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, stdout.String())
	}
	var value map[string]any
	if res.CodeMode != nil {
		_ = json.Unmarshal(res.CodeMode.Value, &value)
	}
	if !res.Success || res.CodeMode == nil || value["doubled"] != 42.0 || res.CodeMode.Summary != "Twice 21 is 42." {
		t.Fatalf("code-mode job: success %v, error %q, codemode %+v", res.Success, res.Error, res.CodeMode)
	}
}
