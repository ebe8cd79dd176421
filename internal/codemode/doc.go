// Package codemode runs programs a model writes in Starlark
// (go.starlark.net) that call Go tools, under enforced limits: execution
// steps, wall time, a memory budget, output size, no while loops and no
// recursion. A static check refuses unknown tools and bad arguments before
// anything runs; a tool's failure reaches the program as a value it can
// test with is_error; parallel_map runs independent tool calls at once; the
// value of the last expression is the run's result.
//
// The package is the interpreter and the tools only; jobs of mode
// codemode (Contract 8) are wired on top of it.
//
// Usage:
//
//	tools := codemode.NewRegistry()
//	tools.MustRegister(codemode.Tool{
//		Name:   "get_weather",
//		Doc:    "Current weather of a city: {temp_c, sky}.",
//		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
//		Func: func(ctx context.Context, args map[string]any) (any, error) {
//			return map[string]any{"temp_c": 21, "sky": "clear"}, nil
//		},
//	})
//	prompt := codemode.DialectRules() // plus tools.ToolDescriptions()
//	res, err := codemode.Run(ctx, `w = get_weather(city="Paris")
//	{"paris": w["temp_c"]}`, tools, codemode.Limits{})
//	// res.Value == map[string]any{"paris": int64(21)}; err is an *Error
//	// (Kind syntax, check, runtime or limit) with a message for the model.
package codemode
