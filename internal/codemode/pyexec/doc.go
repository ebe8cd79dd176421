// Package pyexec runs the Python that models write in code mode: real
// CPython (the sandbox's own interpreter) under the sandbox's limits, with
// tool calls crossing a bridge to the worker.
//
// A run puts three files in the sandbox's workspace: the prelude
// (prelude.py, embedded), the program, and spec.json (the tools and the
// limits). The prelude parses the program with ast and runs the static
// check first (unknown tools or functions, with "did you mean", wrong
// arity, unknown keyword arguments), then defines each tool as a Python
// function whose call sends a JSON line on the bridge (sandbox.RunSpec's
// Stdio: the interpreter's stdin and stdout) and waits for the worker's
// answer; a failing tool raises ToolError, which the program can catch.
// Calls carry ids, so parallel_map and asyncio.gather over tools (inside
// a running event loop a tool call is awaitable) run at once. The value of
// the last expression is the result, as in Starlark code mode. The worker
// side (bridge.go) enforces every limit whatever the program writes: tool
// calls per run, the size of a call's arguments and result, printed
// output and the value; the sandbox enforces memory, CPU, processes and
// wall time, and cuts the network and the worker's environment off.
//
//	r := &pyexec.Runner{Backend: backend}
//	res, err := r.Run(ctx, "w = get_weather('Paris')\nf\"{w['temp_c']:.1f}\"", tools)
//	// res.Value == "21.0"; err is a *codemode.Error for the program's own
//	// failures (syntax, check, runtime, limit), another error for the
//	// infrastructure's.
package pyexec
