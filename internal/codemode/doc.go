// Package codemode is code mode's core: tools (a Registry of Go
// functions, or NATS services), the prompt, the Session, and the Starlark
// interpreter. Programs models write run as Python by default, in CPython
// in the sandbox (package pyexec, an Interpreter); Run here is the
// Starlark option (go.starlark.net), run in this process under enforced
// limits: execution steps, wall time, a memory budget, output size, no
// while loops and no recursion. A static check refuses unknown tools and bad arguments before
// anything runs; a tool's failure reaches the program as a value it can
// test with is_error; parallel_map runs independent tool calls at once; the
// value of the last expression is the run's result.
//
// On top of the interpreter: Session has a chat model write the programs,
// multi-turn (each program's value is the observation, a reply without
// code is the answer) or single-shot with retries (session.go); ServeTool
// and DiscoverTool make a Go function a tool served by another process as
// a NATS micro service (natstools.go); CachedTools keys tool calls by
// content in the project cache (cachedtools.go). Jobs of mode codemode
// run the same pieces as stages (internal/codemodestages).
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
