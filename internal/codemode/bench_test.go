package codemode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/codemode"
)

// The same program in both languages: ten tool calls, a sum.
const (
	starlarkTenCalls = `total = 0
for i in range(10):
    total += get_weather(city="c%d" % i)["temp_c"]
total`

	pythonTenCalls = `import json, sys
def call(tool, **args):
    sys.stdout.write(json.dumps({"tool": tool, "args": args}) + "\n")
    sys.stdout.flush()
    return json.loads(sys.stdin.readline())["result"]
total = 0
for i in range(10):
    total += call("get_weather", city="c%d" % i)["temp_c"]
sys.stdout.write(json.dumps({"done": total}) + "\n")
`
)

// BenchmarkTenToolCalls measures, per op, one Starlark run (interpreter
// start, check, ten tool calls) and one /usr/bin/python3 subprocess making
// the same ten calls through a JSON-lines bridge over its stdin and
// stdout to this process. It reports each as ns/op and their ratio.
func BenchmarkTenToolCalls(b *testing.B) {
	tools := codemode.NewRegistry()
	tools.MustRegister(codemode.Tool{
		Name:   "get_weather",
		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
		Func:   benchWeather,
	})
	benchAgainstPython(b, "starlark-ns/op", func() {
		res, err := codemode.Run(context.Background(), starlarkTenCalls, tools, codemode.Limits{})
		if err != nil || res.Value != int64(210) {
			b.Fatalf("starlark: %v %v", res.Value, err)
		}
	})
}

// benchAgainstPython times starlark and, in the same loop, the Python
// subprocess making the same ten calls over the JSON bridge, and reports
// both per op (starlark under metric) and their ratio.
func benchAgainstPython(b *testing.B, metric string, starlark func()) {
	var starlarkTime, pythonTime time.Duration
	for b.Loop() {
		start := time.Now()
		starlark()
		starlarkTime += time.Since(start)

		start = time.Now()
		if err := runPythonBridge(benchWeather); err != nil {
			b.Fatalf("python: %v", err)
		}
		pythonTime += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(starlarkTime.Nanoseconds())/n, metric)
	b.ReportMetric(float64(pythonTime.Nanoseconds())/n, "python-ns/op")
	b.ReportMetric(float64(pythonTime)/float64(starlarkTime), "python/starlark")
}

// benchWeather is the tool both programs call.
func benchWeather(_ context.Context, args map[string]any) (any, error) {
	return map[string]any{"city": args["city"], "temp_c": 21}, nil
}

// runPythonBridge runs pythonTenCalls and answers its tool requests.
func runPythonBridge(tool codemode.ToolFunc) error {
	cmd := exec.Command("/usr/bin/python3", "-c", pythonTenCalls)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	serveErr := serveBridge(stdout, stdin, tool)
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("python3: %w", err)
	}
	return serveErr
}

func serveBridge(from io.Reader, to io.Writer, tool codemode.ToolFunc) error {
	sc := bufio.NewScanner(from)
	enc := json.NewEncoder(to)
	for sc.Scan() {
		var msg struct {
			Tool string         `json:"tool"`
			Args map[string]any `json:"args"`
			Done *float64       `json:"done"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			return err
		}
		if msg.Done != nil {
			if *msg.Done != 210 {
				return fmt.Errorf("python total %v, want 210", *msg.Done)
			}
			return nil
		}
		res, err := tool(context.Background(), msg.Args)
		if err != nil {
			return err
		}
		if err := enc.Encode(map[string]any{"result": res}); err != nil {
			return err
		}
	}
	return fmt.Errorf("python ended without a result: %w", sc.Err())
}

// BenchmarkTenNATSToolCalls is BenchmarkTenToolCalls with the tool served
// as a NATS micro service (in-process embedded server) and discovered by
// name for every run, as a code-mode job's exec stage does; the Python
// subprocess and its JSON bridge are the same baseline.
func BenchmarkTenNATSToolCalls(b *testing.B) {
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	svc, err := codemode.ServeTool(nc, codemode.Tool{
		Name:   "get_weather",
		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
		Func:   benchWeather,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()
	ctx := context.Background()
	benchAgainstPython(b, "starlark-nats-ns/op", func() {
		tools, err := codemode.DiscoverTools(ctx, nc, []string{"get_weather"})
		if err != nil {
			b.Fatal(err)
		}
		res, err := codemode.Run(ctx, starlarkTenCalls, tools, codemode.Limits{})
		if err != nil || res.Value != int64(210) {
			b.Fatalf("starlark: %v %v", res.Value, err)
		}
	})
}
