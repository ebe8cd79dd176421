package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
)

// embeddedNATS is a fresh embedded NATS and a connection to it.
func embeddedNATS(t *testing.T) *nats.Conn {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", NoAuth: true})
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

func serve(t *testing.T, nc *nats.Conn, tool codemode.Tool) {
	t.Helper()
	svc, err := codemode.ServeTool(nc, tool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
}

// TestNATSToolKeepsFloats: a served tool's float parameter gets a float64
// for a whole number (100), an int one an int64, and a whole float in its
// result (100.0) reaches the program as a float, an int as an int.
func TestNATSToolKeepsFloats(t *testing.T) {
	nc := embeddedNATS(t)
	serve(t, nc, codemode.Tool{Name: "convert", Doc: "Converts an amount.",
		Params: []codemode.Param{{Name: "amount", Type: codemode.TypeFloat, Required: true}, {Name: "n", Type: codemode.TypeInt}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			amount := args["amount"].(float64) // panics for an int64
			n, _ := args["n"].(int64)
			return map[string]any{"price": amount, "n": n, "list": []any{1, 2.0}}, nil
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := codemode.DiscoverTools(ctx, nc, []string{"convert"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := codemode.Run(ctx, `r = convert(amount=100, n=3)
[type(r["price"]), r["price"], type(r["n"]), type(r["list"][0]), type(r["list"][1])]`, tools, codemode.Limits{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	want := []any{"float", 100.0, "int", "int", "float"}
	got, _ := res.Value.([]any)
	if len(got) != len(want) {
		t.Fatalf("value %v, want %v", res.Value, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("value %#v, want %#v", got, want)
		}
	}
}

// TestNATSToolBigIntRefused: a served tool's int parameter refuses a
// number beyond int64 (instead of handing the tool a float64).
func TestNATSToolBigIntRefused(t *testing.T) {
	nc := embeddedNATS(t)
	serve(t, nc, codemode.Tool{Name: "lookup", Params: []codemode.Param{{Name: "n", Type: codemode.TypeInt, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) { return args["n"].(int64), nil }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tool, err := codemode.DiscoverTool(ctx, nc, "lookup")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tool.Func(ctx, map[string]any{"n": json.Number("1180591620717411303424")}) // 2**70
	var tce *codemode.ToolCallError
	if !errors.As(err, &tce) || tce.Msg != "lookup(): argument 'n' is out of range for int" {
		t.Fatalf("err %v", err)
	}
}

// TestNATSToolSeesCancellation: a served tool's context ends when the
// caller stops waiting (its deadline), not never.
func TestNATSToolSeesCancellation(t *testing.T) {
	nc := embeddedNATS(t)
	ended := make(chan time.Duration, 1)
	serve(t, nc, codemode.Tool{Name: "stall", NoCache: true,
		Func: func(ctx context.Context, _ map[string]any) (any, error) {
			start := time.Now()
			select {
			case <-ctx.Done():
				ended <- time.Since(start)
				return nil, ctx.Err()
			case <-time.After(time.Minute):
				ended <- time.Minute
				return "late", nil
			}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tool, err := codemode.DiscoverTool(ctx, nc, "stall")
	if err != nil {
		t.Fatal(err)
	}
	callCtx, callCancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer callCancel()
	if _, err := tool.Func(callCtx, map[string]any{}); err == nil {
		t.Fatal("the call returned no error")
	}
	select {
	case d := <-ended:
		if d > 10*time.Second {
			t.Fatalf("the tool's context ended after %s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the served tool never saw its caller stop waiting")
	}
}

// TestNATSToolAliasForRefusedName: serving a tool under a name a Python
// program could not use (sum) is refused, saying why; a tool is usable
// under an alias.
func TestNATSToolAliasForRefusedName(t *testing.T) {
	nc := embeddedNATS(t)
	ok := codemode.Tool{Name: "total", Params: []codemode.Param{{Name: "xs", Type: codemode.TypeList, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) { return len(args["xs"].([]any)), nil }}
	if _, err := codemode.ServeTool(nc, codemode.Tool{Name: "sum", Func: ok.Func}); err == nil || !strings.Contains(err.Error(), "shadows a builtin") {
		t.Fatalf("serving a tool named sum: %v", err)
	}
	serve(t, nc, ok)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg, err := codemode.DiscoverToolRefs(ctx, nc, []string{"count=total"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := codemode.Run(ctx, `count(xs=[1, 2, 3])`, reg, codemode.Limits{})
	if err != nil || res.Value != int64(3) {
		t.Fatalf("%v, %v", res.Value, err)
	}
}
