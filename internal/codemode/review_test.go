package codemode_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/pkg/cache"
)

// TestAugmentedAssignmentCharged: an augmented assignment is charged and
// its ints capped whatever its target's shape (a parenthesized name, an
// index of a call's result), and each part of the target is evaluated
// once.
func TestAugmentedAssignmentCharged(t *testing.T) {
	ctx := context.Background()
	small := codemode.Limits{MaxAllocBytes: 1 << 20}
	for name, code := range map[string]string{
		"paren string": "s = \"x\"\nfor i in range(24):\n    (s) += s\nlen(s)",
		"paren int":    "n = 3\nfor i in range(20):\n    (n) *= n\nn > 0",
		"call index":   "l = [\"x\"]\ndef f():\n    return l\nfor i in range(24):\n    f()[0] += f()[0]\nlen(l[0])",
		"nested index": "d = {\"a\": [\"x\"]}\nfor i in range(24):\n    d[\"a\"][0] += d[\"a\"][0]\nlen(d[\"a\"][0])",
	} {
		_, err := codemode.Run(ctx, code, codemode.NewRegistry(), small)
		ce, ok := err.(*codemode.Error)
		if !ok || ce.Kind != codemode.KindLimit || !strings.Contains(ce.Msg, "memory limit") {
			t.Errorf("%s: %v, want a memory limit error", name, err)
		}
	}
	res, err := codemode.Run(ctx, `stack = [0, 1, 2]
d = {0: 0, 1: 0, 2: 0}
d[stack.pop()] += 1
l = [[1], [2]]
def f():
    return l
f()[1] += [3]
(((d)))[0] -= 5
[stack, d, l]`, codemode.NewRegistry(), codemode.Limits{})
	if err != nil || string(codemode.MarshalValue(res.Value)) != `[[0,1],{"0":-5,"1":0,"2":1},[[1],[2,3]]]` {
		t.Fatalf("%s, %v", codemode.MarshalValue(res.Value), err)
	}
}

type point struct {
	X     int              `json:"x"`
	Tags  []int            `json:"tags"`
	Score float64          `json:"score"`
	Inner *struct{ N int } `json:"inner"`
}

// TestStructResultKeepsInts: a tool result that goes through
// encoding/json (a struct) keeps its whole numbers ints.
func TestStructResultKeepsInts(t *testing.T) {
	reg := codemode.NewRegistry()
	reg.MustRegister(codemode.Tool{Name: "where", Func: func(context.Context, map[string]any) (any, error) {
		return point{X: 1, Tags: []int{2, 3}, Score: 1.5, Inner: &struct{ N int }{4}}, nil
	}})
	res, err := codemode.Run(context.Background(), `p = where()
[type(p["x"]), type(p["tags"][0]), type(p["score"]), type(p["inner"]["N"]), p["x"] + p["inner"]["N"]]`, reg, codemode.Limits{})
	if err != nil || string(codemode.MarshalValue(res.Value)) != `["int","int","float","int",5]` {
		t.Fatalf("%s, %v", codemode.MarshalValue(res.Value), err)
	}
}

// TestBigIntArgumentStarlark: an int beyond int64 is refused for an int
// parameter (not passed as a string), and is a float for a float one.
func TestBigIntArgumentStarlark(t *testing.T) {
	reg := codemode.NewRegistry()
	var got []any
	reg.MustRegister(codemode.Tool{Name: "lookup", Params: []codemode.Param{{Name: "n", Type: codemode.TypeInt}, {Name: "f", Type: codemode.TypeFloat}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			got = append(got, args["n"], args["f"])
			return 0, nil
		}})
	_, err := codemode.Run(context.Background(), `lookup(n=1 << 70)`, reg, codemode.Limits{})
	if err == nil || !strings.Contains(err.Error(), `argument "n" is out of range for int`) {
		t.Fatalf("err %v", err)
	}
	if _, err := codemode.Run(context.Background(), `lookup(f=1 << 70)`, reg, codemode.Limits{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != float64(1<<70) {
		t.Fatalf("the tool got %#v, want the float 2**70", got)
	}
}

// TestRegisterRefusesPythonNames: a tool named like a Python builtin or
// keyword (or the prelude's names), and a parameter named like a Python
// keyword, are refused at registration, saying why.
func TestRegisterRefusesPythonNames(t *testing.T) {
	noop := func(context.Context, map[string]any) (any, error) { return nil, nil }
	for _, name := range []string{"sum", "open", "format", "filter", "next", "input", "round", "ToolError", "OUTPUTS", "class", "lambda"} {
		err := codemode.NewRegistry().Register(codemode.Tool{Name: name, Func: noop})
		if err == nil || !(strings.Contains(err.Error(), "shadows a builtin") || strings.Contains(err.Error(), "is a Python keyword")) {
			t.Errorf("tool %s: %v", name, err)
		}
	}
	for _, name := range []string{"from", "class", "lambda", "import", "pass"} {
		err := codemode.NewRegistry().Register(codemode.Tool{Name: "get", Func: noop, Params: []codemode.Param{{Name: name, Type: codemode.TypeStr}}})
		if err == nil || !strings.Contains(err.Error(), `parameter name "`+name+`" is a Python keyword`) {
			t.Errorf("parameter %s: %v", name, err)
		}
	}
	for _, name := range []string{"summary", "self", "type", "id", "format_"} { // a parameter may be named like a builtin
		if err := codemode.NewRegistry().Register(codemode.Tool{Name: "get", Func: noop, Params: []codemode.Param{{Name: name, Type: codemode.TypeStr}}}); err != nil {
			t.Errorf("parameter %s: %v", name, err)
		}
	}
}

// pollingTools is a job whose state moves on at each call, cached in a
// directory.
func pollingTools(t *testing.T) (*codemode.Registry, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	reg := codemode.NewRegistry()
	reg.MustRegister(codemode.Tool{Name: "job_status", Params: []codemode.Param{{Name: "id", Type: codemode.TypeStr, Required: true}},
		Func: func(context.Context, map[string]any) (any, error) {
			states := []string{"queued", "running", "done"}
			return map[string]any{"state": states[min(int(calls.Add(1))-1, 2)]}, nil
		}})
	dir, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	return codemode.CachedTools(reg, dir, "job-1", time.Hour), &calls
}

// TestCachedToolPolling: identical calls within a program are cached
// apart (by their order), so polling moves on, and the same program run
// again replays the same answers from the cache.
func TestCachedToolPolling(t *testing.T) {
	tools, calls := pollingTools(t)
	const prog = `states = []
for i in range(10):
    s = job_status(id="j1")["state"]
    states.append(s)
    if s == "done":
        break
states`
	for run := range 2 {
		res, err := codemode.Run(context.Background(), prog, tools, codemode.Limits{})
		if err != nil || string(codemode.MarshalValue(res.Value)) != `["queued","running","done"]` {
			t.Fatalf("run %d: %s, %v", run, codemode.MarshalValue(res.Value), err)
		}
	}
	if calls.Load() != 3 {
		t.Fatalf("the tool was called %d times, want 3 (the replay from the cache)", calls.Load())
	}
}

// limitsInterpreter records the limits it runs under.
type limitsInterpreter struct{ got []codemode.Limits }

func (li *limitsInterpreter) RunProgram(ctx context.Context, code string, tools *codemode.Registry) (codemode.Result, error) {
	return codemode.Run(ctx, code, tools, codemode.Limits{})
}

func (li *limitsInterpreter) RunProgramLimits(ctx context.Context, code string, tools *codemode.Registry, l codemode.Limits) (codemode.Result, error) {
	li.got = append(li.got, l)
	return codemode.Run(ctx, code, tools, l)
}

type plainInterpreter struct{}

func (plainInterpreter) RunProgram(ctx context.Context, code string, tools *codemode.Registry) (codemode.Result, error) {
	return codemode.Run(ctx, code, tools, codemode.Limits{})
}

// TestSessionOptionsApply: MaxRetries 0 is one attempt and no retry;
// Limits reach an Interpreter that applies them, and are refused for one
// that cannot.
func TestSessionOptionsApply(t *testing.T) {
	fx := newFixture(t, 1)
	a, _ := newSession(t, fx.tools, program("1 +"), program("2"))
	a.MaxRetries = 0
	res := runSession(t, a, "Two?")
	if res.Turns != 1 || !strings.HasPrefix(res.Error, "max_retries reached: no program succeeded in 1 attempt") {
		t.Fatalf("MaxRetries 0: %+v", res)
	}

	li := &limitsInterpreter{}
	a, _ = newSession(t, fx.tools, program("n = 0\nfor i in range(100000):\n    n += i\nn"), program("2"))
	a.Interpreter, a.Limits = li, codemode.Limits{MaxSteps: 1000}
	res = runSession(t, a, "Sum?")
	if len(li.got) != 2 || li.got[0].MaxSteps != 1000 || !equalJSON(res.Value, 2) {
		t.Fatalf("limits %+v, result %+v", li.got, res)
	}

	a, _ = newSession(t, fx.tools, program("2"))
	a.Interpreter, a.Limits = plainInterpreter{}, codemode.Limits{MaxToolCalls: 1}
	if _, err := a.Run(context.Background(), "Two?", nil); err == nil || !strings.Contains(err.Error(), "does not apply Session.Limits") {
		t.Fatalf("err %v", err)
	}
}
