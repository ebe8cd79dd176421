package codemode_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/google/go-cmp/cmp"
)

// fixture is a registry of test tools with call counters.
type fixture struct {
	tools *codemode.Registry
	calls atomic.Int64
}

func newFixture(t *testing.T, gateN int) *fixture {
	t.Helper()
	fx := &fixture{tools: codemode.NewRegistry()}
	fx.tools.MustRegister(codemode.Tool{
		Name: "get_weather",
		Doc:  "Current weather of a city.",
		Params: []codemode.Param{
			{Name: "city", Type: codemode.TypeStr, Required: true},
			{Name: "units", Type: codemode.TypeStr},
		},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			fx.calls.Add(1)
			city := args["city"].(string)
			if city == "Atlantis" {
				return nil, errors.New("no such city: Atlantis")
			}
			return map[string]any{"city": city, "temp_c": 21}, nil
		},
	})
	fx.tools.MustRegister(codemode.Tool{
		Name:   "convert",
		Doc:    "Celsius to Fahrenheit.",
		Params: []codemode.Param{{Name: "celsius", Type: codemode.TypeFloat, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			fx.calls.Add(1)
			return args["celsius"].(float64)*9/5 + 32, nil
		},
	})
	fx.tools.MustRegister(gateTool(gateN, &fx.calls))
	return fx
}

// gateTool returns i*10, but only once n calls are in flight at the same
// time: a run that does not overlap its calls waits until its wall time.
func gateTool(n int, calls *atomic.Int64) codemode.Tool {
	var mu sync.Mutex
	inFlight := 0
	open := make(chan struct{})
	return codemode.Tool{
		Name:   "gate",
		Doc:    "Returns i*10 once enough calls are in flight.",
		Params: []codemode.Param{{Name: "i", Type: codemode.TypeInt, Required: true}},
		Func: func(ctx context.Context, args map[string]any) (any, error) {
			calls.Add(1)
			mu.Lock()
			inFlight++
			if inFlight == n {
				close(open)
			}
			mu.Unlock()
			select {
			case <-open:
				return args["i"].(int64) * 10, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		code       string
		limits     codemode.Limits
		want       any
		wantOutput string // a substring of the output
		wantKind   codemode.ErrorKind
		wantErr    string // a substring of the error
		wantLine   int
		wantCol    int
		wantCalls  int64 // -1: do not check
	}{
		{
			name: "two tools, a dict result",
			code: `w = get_weather(city="Paris")
f = convert(celsius=w["temp_c"])
print("paris is", f)
{"city": w["city"], "fahrenheit": f}`,
			want:       map[string]any{"city": "Paris", "fahrenheit": 69.8},
			wantOutput: "paris is 69.8\n",
			wantCalls:  2,
		},
		{
			name: "a tool error handled by the program",
			code: `w = get_weather(city="Atlantis")
"fallback: " + w.message if is_error(w) else w["temp_c"]`,
			want:      "fallback: no such city: Atlantis",
			wantCalls: 1,
		},
		{
			name:      "an unhandled tool error stops the program with its message",
			code:      "w = get_weather(city=\"Atlantis\")\nw[\"temp_c\"]",
			wantKind:  codemode.KindRuntime,
			wantErr:   "tool get_weather failed: no such city: Atlantis",
			wantLine:  2,
			wantCalls: 1,
		},
		{
			name:      "syntax error with line and column",
			code:      "x = 1\ny = (2 +\n",
			wantKind:  codemode.KindSyntax,
			wantLine:  3,
			wantCol:   1,
			wantCalls: 0,
		},
		{
			name:      "unknown tool caught before running",
			code:      "a = get_weather(city=\"Rome\")\nb = 2\nc = get_wether(city=\"Paris\")\n",
			wantKind:  codemode.KindCheck,
			wantErr:   "line 3: unknown tool or function get_wether (did you mean get_weather?); known tools: convert, gate, get_weather",
			wantLine:  3,
			wantCalls: 0,
		},
		{
			name:      "wrong keyword caught before running",
			code:      `get_weather(town="Paris")`,
			wantKind:  codemode.KindCheck,
			wantErr:   "get_weather has no parameter town; parameters: city: str, units: str (optional)",
			wantCalls: 0,
		},
		{
			name:      "too many positional arguments caught before running",
			code:      `convert(1, 2)`,
			wantKind:  codemode.KindCheck,
			wantErr:   "convert takes at most 1 positional arguments, got 2",
			wantCalls: 0,
		},
		{
			name:      "missing required argument caught before running",
			code:      `get_weather(units="metric")`,
			wantKind:  codemode.KindCheck,
			wantErr:   "missing required argument city",
			wantCalls: 0,
		},
		{
			name:      "wrong argument type stops the call",
			code:      `get_weather(city=3)`,
			wantKind:  codemode.KindRuntime,
			wantErr:   `argument "city" must be str, got int`,
			wantCalls: 0,
		},
		{
			name:      "infinite loop stopped by the step limit",
			code:      "for x in range(1000000000000):\n    pass\n",
			limits:    codemode.Limits{MaxSteps: 100_000},
			wantKind:  codemode.KindLimit,
			wantErr:   "step limit",
			wantCalls: 0,
		},
		{
			name:      "long loop stopped by wall time",
			code:      "for x in range(1000000000000):\n    pass\n",
			limits:    codemode.Limits{MaxSteps: 1 << 62, MaxAllocBytes: 1 << 50, WallTime: 100 * time.Millisecond},
			wantKind:  codemode.KindLimit,
			wantErr:   "wall time limit",
			wantCalls: 0,
		},
		{
			name:      "one huge repeat stopped by the memory budget",
			code:      `x = "a" * 1000000000`,
			wantKind:  codemode.KindLimit,
			wantErr:   "memory limit",
			wantLine:  1,
			wantCalls: 0,
		},
		{
			name:      "a doubling loop stopped by the memory budget",
			code:      "s = [1]\nfor i in range(100):\n    s = s + s\n",
			wantKind:  codemode.KindLimit,
			wantErr:   "memory limit",
			wantLine:  3,
			wantCalls: 0,
		},
		{
			name:      "an augmented doubling loop stopped by the memory budget",
			code:      "s = \"ab\"\nfor i in range(100):\n    s += s\n",
			wantKind:  codemode.KindLimit,
			wantErr:   "memory limit",
			wantCalls: 0,
		},
		{
			name:      "a multiplying method stopped by the memory budget",
			code:      "s = \"a\" * 20000\nt = s.replace(\"a\", s)\n",
			wantKind:  codemode.KindLimit,
			wantErr:   "memory limit",
			wantLine:  2,
			wantCalls: 0,
		},
		{
			name:      "getattr reaches the same charged method",
			code:      "s = \"a\" * 20000\nt = getattr(s, \"replace\")(\"a\", s)\n",
			wantKind:  codemode.KindLimit,
			wantErr:   "memory limit",
			wantCalls: 0,
		},
		{
			name:      "repeated squaring stopped before math/big runs away",
			code:      "x = 3\nfor i in range(64):\n    x = x * x\n",
			wantKind:  codemode.KindLimit,
			wantErr:   "bits",
			wantLine:  3,
			wantCalls: 0,
		},
		{
			name:      "materialising a huge range stopped by the memory budget",
			code:      `x = list(range(1000000000))`,
			wantKind:  codemode.KindLimit,
			wantErr:   "memory limit",
			wantCalls: 0,
		},
		{
			name:      "printing shared nested lists stopped by the memory budget",
			code:      "a = [\"x\" * 100] * 1000\nb = [a] * 1000\nc = [b] * 1000\nprint(c)\n",
			wantKind:  codemode.KindLimit,
			wantErr:   "memory limit",
			wantLine:  4,
			wantCalls: 0,
		},
		{
			name:      "appending in a loop is charged by element, not by copy",
			code:      "out = []\nfor i in range(100000):\n    out += [i]\nlen(out)",
			want:      int64(100000),
			wantCalls: 0,
		},
		{
			name:      "a flood of tool calls stopped by the call limit",
			code:      "for i in range(1000):\n    convert(celsius=i)\n",
			limits:    codemode.Limits{MaxToolCalls: 20},
			wantKind:  codemode.KindLimit,
			wantErr:   "more than 20 tool calls",
			wantLine:  2,
			wantCalls: 20,
		},
		{
			name:      "parallel_map over the call limit starts none",
			code:      "parallel_map(convert, [{\"celsius\": i} for i in range(1000)])",
			limits:    codemode.Limits{MaxToolCalls: 20},
			wantKind:  codemode.KindLimit,
			wantErr:   "more than 20 tool calls",
			wantCalls: 0,
		},
		{
			name:      "a tool that blocks is stopped at the wall time",
			code:      "r = gate(i=1)\nr",
			limits:    codemode.Limits{WallTime: 100 * time.Millisecond},
			wantKind:  codemode.KindLimit,
			wantErr:   "wall time limit",
			wantCalls: 1,
		},
		{
			name:      "recursion refused",
			code:      "def f(n):\n    return 0 if n == 0 else f(n - 1)\nf(3)\n",
			wantKind:  codemode.KindRuntime,
			wantErr:   "called recursively",
			wantCalls: 0,
		},
		{
			name:      "while loops refused",
			code:      "while True:\n    pass\n",
			wantKind:  codemode.KindSyntax,
			wantErr:   "does not support while loops",
			wantLine:  1,
			wantCalls: 0,
		},
		{
			name:       "output capped with a note",
			code:       "for i in range(1000):\n    print(\"line\", i)\n\"done\"",
			limits:     codemode.Limits{MaxOutputBytes: 100},
			want:       "done",
			wantOutput: "[output truncated at 100 bytes]",
			wantCalls:  0,
		},
		{
			name:      "parallel_map overlaps calls and keeps their order",
			code:      `parallel_map(gate, [{"i": i} for i in range(4)])`,
			limits:    codemode.Limits{MaxParallel: 4, WallTime: 20 * time.Second},
			want:      []any{int64(0), int64(10), int64(20), int64(30)},
			wantCalls: 4,
		},
		{
			name:      "parallel_map by name, more calls than slots",
			code:      `parallel_map("gate", [{"i": i} for i in range(10)])`,
			limits:    codemode.Limits{MaxParallel: 4, WallTime: 20 * time.Second},
			want:      []any{int64(0), int64(10), int64(20), int64(30), int64(40), int64(50), int64(60), int64(70), int64(80), int64(90)},
			wantCalls: 10,
		},
		{
			name:      "parallel_map with a bad call runs none",
			code:      `parallel_map(get_weather, [{"city": "Rome"}, {"town": "Oslo"}])`,
			wantKind:  codemode.KindCheck,
			wantErr:   "get_weather has no parameter town",
			wantCalls: 0,
		},
		{
			name:      "parallel_map failures are values in their slots",
			code:      "r = parallel_map(get_weather, [{\"city\": c} for c in [\"Rome\", \"Atlantis\"]])\n[is_error(x) for x in r]",
			want:      []any{false, true},
			wantCalls: 2,
		},
		{
			name:      "dict-aliased tool dispatches",
			code:      "t = {\"w\": get_weather, \"c\": convert}\nt[\"c\"](celsius=t[\"w\"](city=\"Oslo\")[\"temp_c\"])",
			want:      69.8,
			wantCalls: 2,
		},
		{
			name:      "program functions and loops",
			code:      "def temps(cities):\n    return [get_weather(city=c)[\"temp_c\"] for c in cities]\ntotal = 0\nfor t in temps([\"A\", \"B\"]):\n    total += t\ntotal",
			want:      int64(42),
			wantCalls: 2,
		},
		{
			name:      "no trailing expression, no value",
			code:      "x = 1",
			want:      nil,
			wantCalls: 0,
		},
		{
			name:      "reserved names refused",
			code:      "__result__ = 1",
			wantKind:  codemode.KindCheck,
			wantErr:   "reserved",
			wantCalls: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, 4)
			res, err := codemode.Run(context.Background(), tt.code, fx.tools, tt.limits)
			checkRunError(t, err, tt.wantKind, tt.wantErr, tt.wantLine, tt.wantCol)
			var ce *codemode.Error
			if errors.As(err, &ce) && strings.Contains(ce.Backtrace, "__") {
				t.Errorf("backtrace shows a rewritten builtin:\n%s", ce.Backtrace)
			}
			if tt.wantKind == "" {
				if diff := cmp.Diff(tt.want, res.Value); diff != "" {
					t.Errorf("value (-want +got):\n%s", diff)
				}
			}
			if !strings.Contains(res.Output, tt.wantOutput) {
				t.Errorf("output %q does not contain %q", res.Output, tt.wantOutput)
			}
			if tt.wantCalls >= 0 && fx.calls.Load() != tt.wantCalls {
				t.Errorf("tool calls = %d, want %d", fx.calls.Load(), tt.wantCalls)
			}
		})
	}
}

func checkRunError(t *testing.T, err error, kind codemode.ErrorKind, substr string, line, col int) {
	t.Helper()
	if kind == "" {
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return
	}
	var ce *codemode.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Run error = %v, want a *codemode.Error of kind %s", err, kind)
	}
	if ce.Kind != kind {
		t.Errorf("kind = %s, want %s (%v)", ce.Kind, kind, err)
	}
	if !strings.Contains(err.Error(), substr) {
		t.Errorf("error %q does not contain %q", err.Error(), substr)
	}
	if line != 0 && ce.Line != line {
		t.Errorf("line = %d, want %d (%v)", ce.Line, line, err)
	}
	if col != 0 && ce.Col != col {
		t.Errorf("col = %d, want %d (%v)", ce.Col, col, err)
	}
}
