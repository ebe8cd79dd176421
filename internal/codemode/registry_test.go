package codemode_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// TestMain is also the tool server of the NATS tests when the test binary
// is started as one (natstools_test.go): a separate process.
func TestMain(m *testing.M) {
	if url := os.Getenv(toolServerEnv); url != "" {
		os.Exit(serveToolsProcess(url))
	}
	goleak.VerifyTestMain(m)
}

func TestToolDescriptions(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	raw, err := fx.tools.ToolDescriptions()
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name   string           `json:"name"`
		Doc    string           `json:"doc"`
		Params []codemode.Param `json:"params"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	names := make([]string, len(got))
	for i, d := range got {
		names[i] = d.Name
	}
	if diff := cmp.Diff([]string{"convert", "gate", "get_weather"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	wantWeather := []codemode.Param{
		{Name: "city", Type: codemode.TypeStr, Required: true},
		{Name: "units", Type: codemode.TypeStr},
	}
	if diff := cmp.Diff(wantWeather, got[2].Params); diff != "" {
		t.Errorf("get_weather params (-want +got):\n%s", diff)
	}
}

func TestRegisterRefuses(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, map[string]any) (any, error) { return nil, nil }
	tests := []struct {
		name string
		tool codemode.Tool
		want string
	}{
		{"not an identifier", codemode.Tool{Name: "get-weather", Func: noop}, "not an identifier"},
		{"shadows a builtin", codemode.Tool{Name: "len", Func: noop}, "shadows a builtin"},
		{"dialect builtin", codemode.Tool{Name: "parallel_map", Func: noop}, "shadows a builtin"},
		{"no function", codemode.Tool{Name: "f"}, "no function"},
		{"repeated parameter", codemode.Tool{Name: "f", Func: noop, Params: []codemode.Param{
			{Name: "a", Type: codemode.TypeStr}, {Name: "a", Type: codemode.TypeInt},
		}}, "repeated parameter"},
		{"unknown type", codemode.Tool{Name: "f", Func: noop, Params: []codemode.Param{{Name: "a", Type: "bytes"}}}, "unknown type"},
		{"twice", codemode.Tool{Name: "get_weather", Func: noop}, "registered twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := newFixture(t, 1).tools.Register(tt.tool)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Register = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestDialectRulesNameTheRules(t *testing.T) {
	t.Parallel()
	rules := codemode.DialectRules()
	for _, want := range []string{"No classes", "no imports", "no\n  while loops", "no recursion", "is_error(", "parallel_map(", "last line"} {
		if !strings.Contains(rules, want) {
			t.Errorf("DialectRules lacks %q", want)
		}
	}
}

func TestCheckRunsNothing(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, 1)
	if err := codemode.Check(`get_weather(city="Paris")`, fx.tools); err != nil {
		t.Fatalf("Check of a good program: %v", err)
	}
	if err := codemode.Check(`load("x.star", "y")`, fx.tools); err == nil || !strings.Contains(err.Error(), "cannot import") {
		t.Errorf("Check of a load = %v, want the no-imports message", err)
	}
	if fx.calls.Load() != 0 {
		t.Errorf("Check called %d tools", fx.calls.Load())
	}
}
