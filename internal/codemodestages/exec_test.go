package codemodestages_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

func natsConn(t *testing.T) *nats.Conn {
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

func execCommand(t *testing.T, in messages.CodeModeExecInput) *messages.StageCommand {
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
	h := mux(t, codemodestages.Config{Conn: nc, Cache: dir})
	cmd := execCommand(t, messages.CodeModeExecInput{Code: `a = lookup(key="x")
b = lookup(key="missing")
{"n": a["n"], "b": b.message if is_error(b) else "?", "tick": tick()}`, Tools: []string{"lookup", "tick"}, Scope: "job-1"})

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
	h := mux(t, codemodestages.Config{Conn: nc})
	o := serve[messages.CodeModeExecOutput](t, h, execCommand(t, messages.CodeModeExecInput{Code: "nope(1)", Tools: []string{}}))
	if o.OK || o.ErrorKind != "check" || !strings.Contains(o.Observation, "Error (check)") {
		t.Fatalf("output %+v", o)
	}
	_, _, err := h.Serve(context.Background(), execCommand(t, messages.CodeModeExecInput{Code: "1", Tools: []string{"ghost"}}))
	if err == nil || !strings.Contains(err.Error(), "no process serves the tool ghost") || !bus.IsPermanent(err) {
		t.Fatalf("err %v", err)
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
