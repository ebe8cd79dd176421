package codemodestages_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

func natsConn(t testing.TB) *nats.Conn {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func execCommand(t testing.TB, in messages.CodeModeExecInput) *messages.StageCommand {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return &messages.StageCommand{V: messages.WireVersion, JobID: "job-1", Seq: 3, Stage: messages.StageCodeModeExec, Cache: messages.CacheAuto, Input: b}
}

// TestExecStage: a program over NATS tools runs in the stage; a tool's
// failure is a value; run again (a redelivered command), the cacheable
// tool is not called twice, the NoCache one is, and the output says it may
// not be stored.
func TestExecStage(t *testing.T) {
	t.Parallel()
	nc := natsConn(t)
	var lookups, ticks atomic.Int64
	for _, tool := range []codemode.Tool{{
		Name: "lookup", Params: []codemode.Param{{Name: "key", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			lookups.Add(1)
			if args["key"] == "missing" {
				return nil, errors.New("no such key")
			}
			return map[string]any{"key": args["key"], "n": 7}, nil
		},
	}, {
		Name: "tick", NoCache: true,
		Func: func(context.Context, map[string]any) (any, error) { return ticks.Add(1), nil },
	}} {
		svc, err := codemode.ServeTool(nc, tool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop() })
	}
	dir, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	h := mux(t, codemodestages.Config{Conn: nc, Cache: dir, Python: python(t)})
	cmd := execCommand(t, messages.CodeModeExecInput{Code: `a = lookup(key="x")
try:
    lookup(key="missing")
    b = "?"
except ToolError as e:
    b = e.message
{"n": a["n"], "b": b, "tick": tick()}`, Tools: []string{"lookup", "tick"}, Scope: "job-1"})

	var outs []messages.CodeModeExecOutput
	for range 2 {
		outs = append(outs, serve[messages.CodeModeExecOutput](t, h, cmd))
	}
	if !outs[0].OK || string(outs[0].Value) != `{"b":"no such key","n":7,"tick":1}` || string(outs[1].Value) != `{"b":"no such key","n":7,"tick":2}` {
		t.Fatalf("values %s then %s", outs[0].Value, outs[1].Value)
	}
	// The failed call is not cached: it ran twice; the successful one once.
	if lookups.Load() != 3 || !outs[0].Uncacheable || outs[0].Hermetic() {
		t.Fatalf("lookup called %d times (want 3: x once, missing twice); uncacheable %v", lookups.Load(), outs[0].Uncacheable)
	}
	if !strings.HasPrefix(outs[0].Observation, "Value: ") {
		t.Fatalf("observation %q", outs[0].Observation)
	}
}

// TestExecStageProgramErrors: a program error is an output for the
// model, not a stage failure; a tool no process serves fails the stage
// permanently, naming it.
func TestExecStageProgramErrors(t *testing.T) {
	t.Parallel()
	nc := natsConn(t)
	h := mux(t, codemodestages.Config{Conn: nc, Python: python(t)})
	o := serve[messages.CodeModeExecOutput](t, h, execCommand(t, messages.CodeModeExecInput{Code: "nope(1)", Tools: []string{}}))
	if o.OK || o.ErrorKind != "check" || !strings.Contains(o.Observation, "Error (check)") {
		t.Fatalf("output %+v", o)
	}
	_, _, err := h.Serve(context.Background(), execCommand(t, messages.CodeModeExecInput{Code: "1", Tools: []string{"ghost"}}))
	if err == nil || !strings.Contains(err.Error(), "no process serves the tool ghost") || !bus.IsPermanent(err) {
		t.Fatalf("err %v", err)
	}
}

// TestExecStageInterpretersAliasesFiles: a tool shown under an alias is
// called by it; what a Python program writes under /var/outputs is
// stored in the outputs object store and listed, images as charts; the
// same job's Starlark program runs in the worker.
func TestExecStageInterpretersAliasesFiles(t *testing.T) {
	t.Parallel()
	nc := natsConn(t)
	svc, err := codemode.ServeTool(nc, codemode.Tool{Name: "lookup",
		Params: []codemode.Param{{Name: "key", Type: codemode.TypeStr, Required: true}},
		Func:   func(_ context.Context, args map[string]any) (any, error) { return "v-" + args["key"].(string), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := js.CreateObjectStore(t.Context(), jetstream.ObjectStoreConfig{Bucket: "outputs"})
	if err != nil {
		t.Fatal(err)
	}
	h := mux(t, codemodestages.Config{Conn: nc, Python: python(t), Files: sandboxstages.ObjectStoreOutputs{Obj: obj}})

	o := serve[messages.CodeModeExecOutput](t, h, execCommand(t, messages.CodeModeExecInput{Code: `import base64
open(OUTPUTS + "/chart.png", "wb").write(base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="))
open(OUTPUTS + "/table.csv", "w").write("a,b\n1,2\n")
find(key="k")`, Tools: []string{"find=lookup"}}))
	if !o.OK || string(o.Value) != `"v-k"` || len(o.Files) != 2 {
		t.Fatalf("output %+v", o)
	}
	chart, table := o.Files[0], o.Files[1]
	if chart.Name != "chart.png" || !chart.Chart || chart.ContentType != "image/png" || table.Chart || table.Name != "table.csv" {
		t.Fatalf("files %+v", o.Files)
	}
	stored, err := obj.GetBytes(t.Context(), "sha256-"+chart.SHA256)
	if err != nil || len(stored) != int(chart.Size) || chart.Object != "sha256:"+chart.SHA256 {
		t.Fatalf("stored chart: %d bytes, %v (object %q)", len(stored), err, chart.Object)
	}

	if o := serve[messages.CodeModeExecOutput](t, h, execCommand(t, messages.CodeModeExecInput{Code: `r = find(key="s")
r if not is_error(r) else "?"`, Tools: []string{"find=lookup"}, Interpreter: messages.InterpreterStarlark})); !o.OK || string(o.Value) != `"v-s"` {
		t.Fatalf("starlark output %+v", o)
	}
}

// TestExecStageToolServerTrouble: over real NATS, a tool whose result is
// 100 MB fails as a ToolError the program can catch (NATS cannot carry
// it), and a tool server that never answers ends the run at its wall time,
// naming the tool.
func TestExecStageToolServerTrouble(t *testing.T) {
	t.Parallel()
	nc := natsConn(t)
	for _, tool := range []codemode.Tool{
		{Name: "big", Func: func(context.Context, map[string]any) (any, error) { return strings.Repeat("x", 100<<20), nil }},
		{Name: "stall", Func: func(context.Context, map[string]any) (any, error) { select {} }},
	} {
		svc, err := codemode.ServeTool(nc, tool)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop() })
	}
	h := mux(t, codemodestages.Config{Conn: nc, Python: python(t)}) // the default wall time: 100 MB take a while under -race
	if o := serve[messages.CodeModeExecOutput](t, h, execCommand(t, messages.CodeModeExecInput{Code: `try:
    big()
    r = "?"
except ToolError as e:
    r = e.message
r`, Tools: []string{"big", "stall"}})); !o.OK || !strings.Contains(string(o.Value), "over the 1048576 bytes a NATS message carries") {
		t.Fatalf("big: %+v", o)
	}
	short := python(t)
	short.Limits.WallTime = 3 * time.Second
	h = mux(t, codemodestages.Config{Conn: nc, Python: short})
	if o := serve[messages.CodeModeExecOutput](t, h, execCommand(t, messages.CodeModeExecInput{Code: "stall()", Tools: []string{"big", "stall"}})); o.OK || o.ErrorKind != "limit" || !strings.Contains(o.Error, "waiting for stall") {
		t.Fatalf("stall: %+v", o)
	}
}

// serve runs cmd on mux and decodes its output.
func serve[T any](t *testing.T, mux *stagework.Mux, cmd *messages.StageCommand) T {
	t.Helper()
	out, _, err := mux.Serve(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(out.Value, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
