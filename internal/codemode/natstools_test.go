package codemode_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/pkg/cache"
)

// toolServerEnv, when set to a NATS URL, makes the test binary a tool
// server process (see TestMain) instead of running tests.
const toolServerEnv = "CODEMODE_TEST_TOOL_SERVER"

// serveToolsProcess serves the test tools on NATS at url, says "ready" on
// stdout, and serves until stdin closes.
func serveToolsProcess(url string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tool server:", err)
		return 1
	}
	defer nc.Close()
	var stockCalls, clockCalls atomic.Int64
	tools := []codemode.Tool{{
		Name:   "stock_level",
		Doc:    "Units in stock of a SKU, with the serving process id: {sku, units, pid, calls}.",
		Params: []codemode.Param{{Name: "sku", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			n := stockCalls.Add(1)
			sku := args["sku"].(string)
			if sku == "NOPE" {
				return nil, errors.New("unknown SKU NOPE")
			}
			return map[string]any{"sku": sku, "units": len(sku) * 10, "pid": os.Getpid(), "calls": n}, nil
		},
	}, {
		Name: "tick", Doc: "A counter that moves on each call (not cacheable).", NoCache: true,
		Func: func(context.Context, map[string]any) (any, error) { return clockCalls.Add(1), nil },
	}}
	for _, t := range tools {
		svc, err := codemode.ServeTool(nc, t)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tool server:", err)
			return 1
		}
		defer func() { _ = svc.Stop() }()
	}
	if err := nc.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "tool server:", err)
		return 1
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
	return 0
}

// startToolServer runs the test binary as a tool server process connected
// to a fresh embedded NATS, and returns a connection to that NATS.
func startToolServer(t *testing.T) *nats.Conn {
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

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), toolServerEnv+"="+srv.ClientURL())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("tool server process: %q, %v", line, err)
	}
	return nc
}

// TestNATSToolFromAnotherProcess: the program calls a local Go tool and a
// tool served by another process over NATS (discovered by name); the
// remote tool's error reaches the program as a value.
func TestNATSToolFromAnotherProcess(t *testing.T) {
	nc := startToolServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	remote, err := codemode.DiscoverTools(ctx, nc, []string{"stock_level"})
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, 1)
	tools := codemode.NewRegistry()
	st, _ := remoteTool(t, remote, "stock_level")
	tools.MustRegister(st)
	gw, _ := remoteTool(t, fx.tools, "get_weather")
	tools.MustRegister(gw)

	a, _ := newSession(t, tools, program(`s = stock_level(sku="ABC")
bad = stock_level(sku="NOPE")
w = get_weather(city="Paris")
{"units": s["units"], "pid": s["pid"], "bad": bad.message if is_error(bad) else "ok", "temp": w["temp_c"]}`))
	res := runSession(t, a, "Stock of ABC and weather in Paris?")
	got, ok := res.Value.(map[string]any)
	if !ok || res.Error != "" {
		t.Fatalf("result %+v", res)
	}
	if !equalJSON(got["units"], 30) || !equalJSON(got["temp"], 21) || got["bad"] != "unknown SKU NOPE" {
		t.Fatalf("value %v", got)
	}
	if pid, _ := got["pid"].(int64); pid == 0 || pid == int64(os.Getpid()) {
		t.Fatalf("the tool ran in process %v, want another process than the test's %d", got["pid"], os.Getpid())
	}
	desc, err := remote.ToolDescriptions()
	if err != nil || !strings.Contains(string(desc), `"name":"sku","type":"str","required":true`) {
		t.Fatalf("discovered description %s, %v", desc, err)
	}
}

// TestNATSToolCallsCached: a program run twice calls a cacheable tool once
// (the second run reads the project cache) and a NoCache tool twice.
func TestNATSToolCallsCached(t *testing.T) {
	nc := startToolServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	remote, err := codemode.DiscoverTools(ctx, nc, []string{"stock_level", "tick"})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	tools := codemode.CachedTools(remote, dir, "job-1", 0)
	const prog = `s = stock_level(sku="ABC")
{"calls": s["calls"], "tick": tick()}`
	first, err := codemode.Run(ctx, prog, tools, codemode.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := codemode.Run(ctx, prog, tools, codemode.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want1, want2 := map[string]any{"calls": 1, "tick": 1}, map[string]any{"calls": 1, "tick": 2}
	if !equalJSON(first.Value, want1) || !equalJSON(second.Value, want2) {
		t.Fatalf("values %v then %v, want %v then %v (stock_level served from the cache, tick called again)", first.Value, second.Value, want1, want2)
	}
	other, err := codemode.Run(ctx, prog, codemode.CachedTools(remote, dir, "job-2", 0), codemode.Limits{})
	if err != nil || !equalJSON(other.Value, map[string]any{"calls": 2, "tick": 3}) {
		t.Fatalf("another scope shares no entries: %v, %v", other.Value, err)
	}
}

func TestDiscoverMissingTool(t *testing.T) {
	nc := startToolServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := codemode.DiscoverTools(ctx, nc, []string{"stock_level", "no_such_tool"})
	if err == nil || !strings.Contains(err.Error(), "no process serves the tool no_such_tool") {
		t.Fatalf("err %v", err)
	}
}

// remoteTool takes one tool out of a registry, by way of its public API.
func remoteTool(t *testing.T, r *codemode.Registry, name string) (codemode.Tool, bool) {
	t.Helper()
	tool, ok := r.Tool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool, ok
}

// TestNATSToolRoles: on a NATS with users, a tool-server user serves a
// tool, a sandbox-worker user (as the exec stage runs) discovers and calls
// it, and a producer reads its description but may not call it.
func TestNATSToolRoles(t *testing.T) {
	const pw = "tool-roles-test-password"
	env := bustest.StartWithUsers(t, bus.ProvisionConfig{}, []bus.User{
		{Name: "tools", Password: pw, Role: bus.RoleToolServer, Tools: []string{"echo"}},
		{Name: "sandbox", Password: pw, Role: bus.RoleSandboxWorker},
		{Name: "producer", Password: pw, Role: bus.RoleProducer},
	})
	connect := func(user string, role bus.Role) *nats.Conn {
		return env.ConnectAs(t, bus.ClientAuth{User: user, Password: pw, Role: role}).Conn()
	}
	svc, err := codemode.ServeTool(connect("tools", bus.RoleToolServer), codemode.Tool{
		Name: "echo", Params: []codemode.Param{{Name: "s", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) { return args["s"], nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := codemode.DiscoverTools(ctx, connect("sandbox", bus.RoleSandboxWorker), []string{"echo"})
	if err != nil {
		t.Fatalf("a sandbox-worker discovers the tool: %v", err)
	}
	res, err := codemode.Run(ctx, `echo(s="hi")`, tools, codemode.Limits{})
	if err != nil || res.Value != "hi" {
		t.Fatalf("a sandbox-worker calls the tool: %v, %v", res.Value, err)
	}
	// A producer reads the tools' descriptions (`submit codemode tools`,
	// answered on its tool inboxes) but may not call one.
	producer := connect("producer", bus.RoleProducer)
	listed, err := codemode.DiscoverTools(ctx, producer, []string{"echo"})
	if err != nil {
		t.Fatalf("a producer lists the tool: %v", err)
	}
	if _, err := codemode.DiscoverTools(ctx, producer, []string{"nobody"}); err == nil {
		t.Error("a producer found a tool nobody serves")
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	if res, err := codemode.Run(short, `echo(s="hi")`, listed, codemode.Limits{}); err == nil {
		t.Fatalf("a producer called a tool (%v): only sandbox-workers may", res.Value)
	}
}
