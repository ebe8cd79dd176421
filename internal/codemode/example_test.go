package codemode_test

import (
	"context"
	"fmt"

	"github.com/autocoder/autocoder/internal/codemode"
)

func ExampleRun() {
	tools := codemode.NewRegistry()
	tools.MustRegister(codemode.Tool{
		Name:   "get_weather",
		Doc:    "Current weather of a city: {temp_c, sky}.",
		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
		Func: func(ctx context.Context, args map[string]any) (any, error) {
			return map[string]any{"temp_c": 21, "sky": "clear"}, nil
		},
	})
	res, err := codemode.Run(context.Background(), `w = get_weather(city="Paris")
{"paris": w["temp_c"]}`, tools, codemode.Limits{})
	fmt.Println(res.Value, err)

	_, err = codemode.Run(context.Background(), `get_wether(city="Paris")`, tools, codemode.Limits{})
	fmt.Println(err)
	// Output:
	// map[paris:21] <nil>
	// line 1: unknown tool or function get_wether (did you mean get_weather?); known tools: get_weather
}
