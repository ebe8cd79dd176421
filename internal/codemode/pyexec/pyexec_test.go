package pyexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/codemode/pyexec"
)

func TestRunBasics(t *testing.T) {
	t.Parallel()
	r := &pyexec.Runner{Backend: processBackend(t)}
	res, err := r.Run(context.Background(), `import asyncio
cities = []
page = 0
while page is not None:
    r = search("c", page=page)
    cities += r["items"]
    page = r["next_page"]
try:
    get_weather("Atlantis")
except ToolError as e:
    print("caught:", e.message)
temps = {c: get_weather(c)["temp_c"] for c in cities}
both = await asyncio.gather(get_weather("Paris"), get_weather(city="Oslo"))
print(f"{sum(temps.values()) / len(temps):.2f}")
{"temps": temps, "both": [w["temp_c"] for w in both], "pm": [w["temp_c"] for w in parallel_map(get_weather, [{"city": "Lima"}, {"city": "x"}]) if not isinstance(w, ToolError)]}
`, weatherTools())
	if err != nil {
		t.Fatalf("Run: %v (%s)", err, codemode.ErrorText(err))
	}
	t.Logf("value %v output %q calls %d in %s", res.Value, res.Output, res.ToolCalls, res.Duration)
	if !strings.Contains(res.Output, "caught: unknown city Atlantis") || !strings.Contains(res.Output, "20.75") {
		t.Fatalf("output %q", res.Output)
	}
}

// TestStaticCheckBeforeAnyCall: unknown names (with "did you mean"),
// wrong arity, unknown keywords and missing arguments are refused before
// the program's first tool call, with the line; a syntax error is one.
func TestStaticCheckBeforeAnyCall(t *testing.T) {
	t.Parallel()
	r := &pyexec.Runner{Backend: processBackend(t)}
	for _, tc := range []struct {
		code string
		kind codemode.ErrorKind
		line int
		want string
	}{
		{"get_weather('Paris')\nget_wether('Oslo')", codemode.KindCheck, 2, "unknown tool or function get_wether (did you mean get_weather?); known tools: get_weather, search"},
		{"get_weather('Paris')\nget_weather('a', 'b')", codemode.KindCheck, 2, "get_weather() takes at most 1 positional arguments (2 given)"},
		{"x = 1\nsearch(query='a', pgae=2)", codemode.KindCheck, 2, "search() got an unexpected keyword argument 'pgae' (did you mean page?)"},
		{"search(page=1)", codemode.KindCheck, 1, "search() missing required argument 'query'"},
		{"parallel_map('get_weathr', [{'city': 'a'}])", codemode.KindCheck, 1, "parallel_map: unknown tool 'get_weathr' (did you mean get_weather?)"},
		{"parallel_map(get_weather, [{'town': 'a'}])", codemode.KindCheck, 1, "parallel_map: get_weather() got an unexpected keyword argument 'town'"},
		{"get_weather('Paris')\nfor x in [1, 2]\n    pass", codemode.KindSyntax, 2, "SyntaxError"},
	} {
		res, err := r.Run(t.Context(), tc.code, weatherTools())
		var ce *codemode.Error
		if !errors.As(err, &ce) || ce.Kind != tc.kind || ce.Line != tc.line || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("%q: error %v (%+v), want %s at line %d saying %q", tc.code, err, ce, tc.kind, tc.line, tc.want)
			continue
		}
		if res.ToolCalls != 0 {
			t.Errorf("%q: %d tool calls before the refusal", tc.code, res.ToolCalls)
		}
	}
}

// TestRuntimeErrorsAndValues: an exception is a runtime error at the
// program's line with a traceback of the program's frames only; what was
// printed before stays; values come back as JSON, big ints exactly.
func TestRuntimeErrorsAndValues(t *testing.T) {
	t.Parallel()
	r := &pyexec.Runner{Backend: processBackend(t)}
	res, err := r.Run(t.Context(), "def f(d):\n    return d['temp']\nprint('before')\nf(get_weather('Paris'))", weatherTools())
	var ce *codemode.Error
	if !errors.As(err, &ce) || ce.Kind != codemode.KindRuntime || ce.Line != 2 || ce.Msg != "KeyError: 'temp'" ||
		!strings.Contains(ce.Backtrace, `File "<program>", line 4, in <module>`) || strings.Contains(ce.Backtrace, "prelude") {
		t.Fatalf("error %+v", ce)
	}
	if res.Output != "before\n" {
		t.Fatalf("output %q", res.Output)
	}
	res, err = r.Run(t.Context(), "import datetime\n{'big': 2 ** 70, 's': {3, 1, 2}, 't': (1, 'a'), 'd': datetime.date(2024, 1, 2), 'f': 0.1 + 0.2}", weatherTools())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(codemode.MarshalValue(res.Value)); got != `{"big":1180591620717411303424,"d":"2024-01-02","f":0.30000000000000004,"s":[1,2,3],"t":[1,"a"]}` {
		t.Fatalf("value %s", got)
	}
}

// TestConcurrentCalls: calls gathered with asyncio and parallel_map are
// in flight at once: the tool answers only when two calls are waiting.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	reg := codemode.NewRegistry()
	arrived := make(chan struct{}, 16)
	reg.MustRegister(codemode.Tool{Name: "pair", Params: []codemode.Param{{Name: "x", Type: codemode.TypeInt, Required: true}},
		Func: func(ctx context.Context, args map[string]any) (any, error) {
			arrived <- struct{}{}
			// Both calls of a pair must be in flight: wait for the other.
			for len(arrived) < 2 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
			}
			return args["x"].(int64) * 10, nil
		}})
	r := &pyexec.Runner{Backend: processBackend(t), Limits: pyexec.Limits{WallTime: 20 * time.Second}}
	for _, code := range []string{
		"import asyncio\nawait asyncio.gather(pair(1), pair(x=2))",
		"import asyncio\nasync def main():\n    a, b = await asyncio.gather(pair(1), pair(2))\n    return [a, b]\nasyncio.run(main())",
		"parallel_map(pair, [{'x': 1}, {'x': 2}])",
	} {
		for len(arrived) > 0 {
			<-arrived
		}
		res, err := r.Run(t.Context(), code, reg)
		if err != nil || string(codemode.MarshalValue(res.Value)) != "[10,20]" {
			t.Errorf("%q: %v %v (the calls did not run at once)", code, res.Value, err)
		}
	}
}
