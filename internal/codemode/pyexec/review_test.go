package pyexec_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
	"github.com/autocoder/autocoder/pkg/cache"
)

// pairTools are a tool whose calls answer only when two have come
// (so a program that ran them one after another times out), and one
// that returns a whole float.
func pairTools() *codemode.Registry {
	reg := codemode.NewRegistry()
	var arrived atomic.Int64
	reg.MustRegister(codemode.Tool{Name: "get_weather", Doc: "{city, temp_c}",
		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
		Func: func(ctx context.Context, args map[string]any) (any, error) {
			arrived.Add(1) // the registry's calls so far: a program makes two
			deadline := time.Now().Add(3 * time.Second)
			for arrived.Load() < 2 && time.Now().Before(deadline) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(2 * time.Millisecond):
				}
			}
			if arrived.Load() < 2 {
				return nil, context.DeadlineExceeded // called alone: not concurrent
			}
			return map[string]any{"city": args["city"], "temp_c": len(args["city"].(string))}, nil
		}})
	reg.MustRegister(codemode.Tool{Name: "price", Doc: "A price.",
		Params: []codemode.Param{{Name: "amount", Type: codemode.TypeFloat, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			return map[string]any{"price": args["amount"].(float64), "n": 3}, nil
		}})
	reg.MustRegister(codemode.Tool{Name: "lookup", Doc: "n back.",
		Params: []codemode.Param{{Name: "n", Type: codemode.TypeInt, Required: true}},
		Func:   func(_ context.Context, args map[string]any) (any, error) { return args["n"].(int64), nil }})
	return reg
}

func runPy(t *testing.T, code string, tools *codemode.Registry) (pyexec.Result, error) {
	t.Helper()
	r := &pyexec.Runner{Backend: processBackend(t), Limits: pyexec.Limits{WallTime: 20 * time.Second}}
	return r.Run(t.Context(), code, tools)
}

// TestAsyncioPatterns: the ways a model writes concurrent tool calls in
// asyncio all run the calls at once (the tool answers only when two are
// in flight), and a plain call outside async code returns its value.
func TestAsyncioPatterns(t *testing.T) {
	t.Parallel()
	const want = `[4,5]`
	for name, code := range map[string]string{
		"tasks list in main": `import asyncio
async def main():
    tasks = [get_weather(c) for c in ["Oslo", "Paris"]]
    res = await asyncio.gather(*tasks)
    return [r["temp_c"] for r in res]
asyncio.run(main())`,
		"tasks list top level": `import asyncio
tasks = [get_weather(c) for c in ["Oslo", "Paris"]]
res = await asyncio.gather(*tasks)
[r["temp_c"] for r in res]`,
		"create_task": `import asyncio
async def main():
    a = asyncio.create_task(get_weather("Oslo"))
    b = asyncio.create_task(get_weather("Paris"))
    return [(await a)["temp_c"], (await b)["temp_c"]]
asyncio.run(main())`,
		"TaskGroup": `import asyncio
async def main():
    async with asyncio.TaskGroup() as tg:
        ts = [tg.create_task(get_weather(c)) for c in ["Oslo", "Paris"]]
    return [t.result()["temp_c"] for t in ts]
asyncio.run(main())`,
		"gather map in main": `import asyncio
async def main():
    res = await asyncio.gather(*map(get_weather, ["Oslo", "Paris"]))
    return [r["temp_c"] for r in res]
asyncio.run(main())`,
		"gather map top level": `import asyncio
res = await asyncio.gather(*map(get_weather, ["Oslo", "Paris"]))
[r["temp_c"] for r in res]`,
		"async def awaiting": `import asyncio
async def one(c):
    w = await get_weather(c)
    return w["temp_c"]
async def main():
    return list(await asyncio.gather(one("Oslo"), one("Paris")))
asyncio.run(main())`,
		"ensure_future and wait": `import asyncio
async def main():
    fs = [asyncio.ensure_future(get_weather(c)) for c in ["Oslo", "Paris"]]
    await asyncio.wait(fs)
    return [f.result()["temp_c"] for f in fs]
asyncio.run(main())`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := runPy(t, code, pairTools())
			if err != nil || string(codemode.MarshalValue(res.Value)) != want {
				t.Fatalf("%v, %v (%s); want %s", res.Value, err, codemode.ErrorText(err), want)
			}
		})
	}
	// A plain call, outside async code, is its value (a dict).
	res, err := runPy(t, `w = price(amount=2.5)
[type(w).__name__, isinstance(w, dict)]`, pairTools())
	if err != nil || string(codemode.MarshalValue(res.Value)) != `["dict",true]` {
		t.Fatalf("plain call: %v, %v", res.Value, err)
	}
}

// TestFloatsStayFloats: a float parameter given 100 reaches the tool as a
// float64, and a whole float in a result reaches the program as a float.
func TestFloatsStayFloats(t *testing.T) {
	t.Parallel()
	res, err := runPy(t, `r = price(amount=100)
[type(r["price"]).__name__, type(r["n"]).__name__]`, pairTools())
	if err != nil || string(codemode.MarshalValue(res.Value)) != `["float","int"]` {
		t.Fatalf("%v, %v", res.Value, err)
	}
}

// TestBigIntArgumentRefused: an int beyond int64 is refused, not sent to
// the tool as a float.
func TestBigIntArgumentRefused(t *testing.T) {
	t.Parallel()
	res, err := runPy(t, `try:
    lookup(n=2**70)
except TypeError as e:
    print(e)
lookup(n=2**62)`, pairTools())
	if err != nil || !strings.Contains(res.Output, "lookup(): argument 'n' is out of range for int") ||
		string(codemode.MarshalValue(res.Value)) != "4611686018427387904" {
		t.Fatalf("%v %q, %v", res.Value, res.Output, err)
	}
}

// TestDeeplyNestedProgram: a program nested deeper than the prelude's
// passes go runs, or is refused with a clear check error (never a crash
// of the prelude).
func TestDeeplyNestedProgram(t *testing.T) {
	t.Parallel()
	sum := "x = 1\n" + strings.Repeat("x + ", 500) + "x"
	var elif strings.Builder
	elif.WriteString("x = 7\nif x == 0:\n    y = 0\n")
	for i := 1; i < 500; i++ {
		elif.WriteString("elif x == " + strconv.Itoa(i) + ":\n    y = " + strconv.Itoa(i) + "\n")
	}
	elif.WriteString("y")
	for name, tc := range map[string]struct{ code, value string }{
		"sum":  {sum, "501"},
		"elif": {elif.String(), "7"},
	} {
		res, err := runPy(t, tc.code, pairTools())
		if err == nil {
			if string(codemode.MarshalValue(res.Value)) != tc.value {
				t.Errorf("%s: value %v, want %s", name, res.Value, tc.value)
			}
			continue
		}
		ce, ok := err.(*codemode.Error)
		if !ok || ce.Kind != codemode.KindCheck || !strings.Contains(ce.Msg, "nests too deeply") {
			t.Errorf("%s: %v", name, err)
		}
	}
	deep := "x = " + strings.Repeat("(", 190) + "1" + strings.Repeat(")", 190) + "\n" + "y = 1\n" + strings.Repeat("y + ", 5000) + "y"
	_, err := runPy(t, deep, pairTools())
	ce, ok := err.(*codemode.Error)
	if !ok || (ce.Kind != codemode.KindCheck && ce.Kind != codemode.KindSyntax) || strings.Contains(ce.Msg, "exited") {
		t.Errorf("very deep: %v", err)
	}
}

// TestProgramIsMain: the program runs as a real __main__ module: its
// classes pickle, typing resolves their hints, __file__ is set, and
// `import __main__` is the program, without the prelude's internals.
func TestProgramIsMain(t *testing.T) {
	t.Parallel()
	res, err := runPy(t, `import pickle, typing, dataclasses, __main__
@dataclasses.dataclass
class Point:
    x: int
    y: "Point | None" = None
p = pickle.loads(pickle.dumps(Point(1, Point(2))))
hints = typing.get_type_hints(Point)
[p.y.x, sorted(hints), __name__, __file__.endswith(".py"), hasattr(__main__, "_run"), hasattr(__main__, "_TOOLS"), __main__.Point is Point, callable(__main__.price)]`, pairTools())
	if err != nil || string(codemode.MarshalValue(res.Value)) != `[2,["x","y"],"__main__",true,false,false,true,true]` {
		t.Fatalf("%v, %v (%s)", res.Value, err, codemode.ErrorText(err))
	}
}

// TestParameterNamedSelf: a parameter may be named like the prelude's own
// arguments (self).
func TestParameterNamedSelf(t *testing.T) {
	t.Parallel()
	reg := codemode.NewRegistry()
	reg.MustRegister(codemode.Tool{Name: "echo", Params: []codemode.Param{{Name: "self", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) { return args["self"], nil }})
	res, err := runPy(t, `[echo(self="a"), echo("b")]`, reg)
	if err != nil || string(codemode.MarshalValue(res.Value)) != `["a","b"]` {
		t.Fatalf("%v, %v", res.Value, err)
	}
}

// TestCachedToolPollingPython: a Python program that polls a cached tool
// sees its answers move on, and a replay gets the same ones.
func TestCachedToolPollingPython(t *testing.T) {
	t.Parallel()
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
	defer dir.Close()
	tools := codemode.CachedTools(reg, dir, "job-1", time.Hour)
	const prog = `states = []
while not states or states[-1] != "done":
    states.append(job_status(id="j1")["state"])
    if len(states) > 10:
        break
states`
	for run := range 2 {
		res, err := runPy(t, prog, tools)
		if err != nil || string(codemode.MarshalValue(res.Value)) != `["queued","running","done"]` {
			t.Fatalf("run %d: %v, %v", run, res.Value, err)
		}
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls, want 3", calls.Load())
	}
}

// TestRunProgramLimits: a Session's Limits that apply to Python reach the
// run (here MaxToolCalls).
func TestRunProgramLimits(t *testing.T) {
	t.Parallel()
	r := &pyexec.Runner{Backend: processBackend(t)}
	_, err := r.RunProgramLimits(t.Context(), "lookup(n=1)\nlookup(n=2)", pairTools(), codemode.Limits{MaxToolCalls: 1})
	ce, ok := err.(*codemode.Error)
	if !ok || ce.Kind != codemode.KindLimit || !strings.Contains(ce.Msg, "more than 1 tool calls") {
		t.Fatalf("%v", err)
	}
}
