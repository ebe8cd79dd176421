package codemodestages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
	"github.com/autocoder/autocoder/internal/codemodestages"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

// benchTurnLatency stands for the model's reply in a real turn.
const benchTurnLatency = 200 * time.Millisecond

// The same program for both interpreters: ten calls of a NATS tool, a sum
// (Starlark's dialect is a subset of Python, so one text serves both).
const benchTenCalls = `total = 0
for i in range(10):
    total += get_weather(city="c%d" % i)["temp_c"]
total`

// BenchmarkCodeModeTenCalls runs, per op, the program through the
// codemode_exec stage handler (tools discovered and called over an
// embedded NATS server, start of the interpreter included) with each
// interpreter, interleaved so that they share the machine's load:
// Starlark in the worker, Python in the process sandbox (bubblewrap), and
// Python in a Docker (Podman) container when an engine answers. It
// reports each in ms/op, the ratios to Starlark, and the same with the
// 200 ms of a real model turn added to each (what the difference is worth
// per turn). No timing is asserted.
func BenchmarkCodeModeTenCalls(b *testing.B) {
	nc := natsConn(b)
	svc, err := codemode.ServeTool(nc, codemode.Tool{Name: "get_weather",
		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
		Func:   func(context.Context, map[string]any) (any, error) { return map[string]any{"temp_c": 21}, nil }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Stop() })
	runners := []struct {
		name string
		h    *stagework.Mux
		in   messages.Interpreter
	}{
		{"starlark", mux(b, codemodestages.Config{Conn: nc}), messages.InterpreterStarlark},
		{"python-process", mux(b, codemodestages.Config{Conn: nc, Python: python(b)}), messages.InterpreterPython},
	}
	if d := benchDocker(b); d != nil {
		runners = append(runners, struct {
			name string
			h    *stagework.Mux
			in   messages.Interpreter
		}{"python-docker", mux(b, codemodestages.Config{Conn: nc, Python: d}), messages.InterpreterPython})
	}
	spent := make([]time.Duration, len(runners))
	for b.Loop() {
		for i, r := range runners {
			cmd := execCommandB(b, messages.CodeModeExecInput{Code: benchTenCalls, Tools: []string{"get_weather"}, Interpreter: r.in})
			cmd.Cache = messages.CacheDisable
			start := time.Now()
			out, _, err := r.h.Serve(context.Background(), cmd)
			spent[i] += time.Since(start)
			if err != nil {
				b.Fatalf("%s: %v", r.name, err)
			}
			var o messages.CodeModeExecOutput
			if err := json.Unmarshal(out.Value, &o); err != nil || !o.OK || string(o.Value) != "210" {
				b.Fatalf("%s: %+v", r.name, o)
			}
		}
	}
	n := float64(b.N)
	base := spent[0].Seconds() / n
	turn := benchTurnLatency.Seconds()
	for i, r := range runners {
		per := spent[i].Seconds() / n
		b.ReportMetric(per*1000, r.name+"-ms/op")
		if i > 0 {
			b.ReportMetric(per/base, r.name+"/starlark")
			b.ReportMetric((turn+per)/(turn+base), r.name+"/starlark-per-turn")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// benchDocker is a Python runner on the Docker backend, or nil when no
// engine answers (the benchmark then compares the other two).
func benchDocker(b *testing.B) *pyexec.Runner {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := docker.Ping(ctx, ""); err != nil {
		b.Logf("no Docker engine: %v (python-docker left out)", err)
		return nil
	}
	base := os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE")
	if base == "" {
		base = "autocoder-base:bookworm"
	}
	d, err := docker.New(ctx, docker.Config{BaseImage: base, NoPull: true, Worker: "codemode-bench", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatalf("docker.New: %v", err)
	}
	b.Cleanup(func() { _ = d.Close() })
	return &pyexec.Runner{Backend: d}
}

func execCommandB(b *testing.B, in messages.CodeModeExecInput) *messages.StageCommand {
	cmd := execCommand(b, in)
	cmd.JobID = fmt.Sprintf("bench-%d", time.Now().UnixNano())
	return cmd
}
