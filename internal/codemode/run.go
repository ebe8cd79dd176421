package codemode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Result is what a run produced.
type Result struct {
	// Value is the last expression's value as JSON-able Go (nil when the
	// program does not end with an expression).
	Value any
	// Output is what the program printed, capped at Limits.MaxOutputBytes.
	Output string
	// Steps is the number of Starlark execution steps taken.
	Steps uint64
	// Duration is the wall time of the run, parsing included.
	Duration time.Duration
}

// ErrorKind says which stage refused or stopped a program.
type ErrorKind string

// The kinds of Error.
const (
	KindSyntax  ErrorKind = "syntax"  // not valid Starlark, or an undefined name
	KindCheck   ErrorKind = "check"   // the static check: unknown tool, bad arguments
	KindRuntime ErrorKind = "runtime" // the program failed while running
	KindLimit   ErrorKind = "limit"   // a limit stopped it: steps, wall time, memory
)

// Error is a refused or failed program, with a message written for the
// model that wrote it.
type Error struct {
	Kind      ErrorKind
	Line, Col int // 0 when unknown
	Msg       string
	// Backtrace is the Starlark call stack of a runtime error.
	Backtrace string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("line %d col %d: %s", e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

const fileName = "program.star"

// fileOptions is the dialect: top-level for and if (programs are scripts),
// reassignable globals, sets; no while and no recursion, so that every
// loop is bounded by what it iterates over.
var fileOptions = &syntax.FileOptions{Set: true, TopLevelControl: true, GlobalReassign: true}

// Run checks, then runs one program with the given tools under limits.
// The returned error is an *Error; the Result holds what was printed and
// the steps taken even then.
func Run(ctx context.Context, code string, tools *Registry, limits Limits) (Result, error) {
	limits = limits.withDefaults()
	start := time.Now()
	f, err := fileOptions.Parse(fileName, code, 0)
	if err != nil {
		return Result{Duration: time.Since(start)}, syntaxError(err)
	}
	if err := checkFile(f, tools); err != nil {
		return Result{Duration: time.Since(start)}, err
	}
	hasResult, err := rewriteFile(f)
	if err != nil {
		return Result{Duration: time.Since(start)}, syntaxError(err)
	}

	ctx, cancel := context.WithTimeout(WithCallOrdinals(ctx), limits.WallTime)
	defer cancel()
	rs := &runState{ctx: ctx, tools: tools, limits: limits}
	predeclared := rs.predeclared()
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return Result{Duration: time.Since(start)}, syntaxError(err)
	}
	thread := rs.newThread()
	stop := context.AfterFunc(ctx, func() { thread.Cancel(rs.cancelReason()) })
	defer stop()
	out, ok := rs.exec(prog, thread, predeclared)
	if !ok {
		return Result{Output: rs.output(), Duration: time.Since(start)}, &Error{Kind: KindLimit, Msg: rs.cancelReason() +
			" (it was inside a builtin that does not stop at once; its result will be dropped)"}
	}
	res := Result{Output: rs.output(), Steps: thread.ExecutionSteps(), Duration: time.Since(start)}
	if out.err != nil {
		return res, rs.runError(out.err)
	}
	if hasResult {
		res.Value = toGo(out.globals[resultName])
	}
	return res, nil
}

// stuckGrace is how long Run waits, once the wall time is up, for a
// program inside one long builtin call (a sort or a set of values whose
// hashes collide) to reach its next step and stop; after it Run returns
// and leaves the call to finish alone. Its memory is bounded by the
// budget, and the thread stops at its next step.
const stuckGrace = 2 * time.Second

type execOutcome struct {
	globals starlark.StringDict
	err     error
}

// exec runs the program on its own goroutine, so that the wall time holds
// even when a builtin does not return: ok is false when it gave up.
func (rs *runState) exec(prog *starlark.Program, thread *starlark.Thread, predeclared starlark.StringDict) (execOutcome, bool) {
	done := make(chan execOutcome, 1)
	go func() {
		var out execOutcome
		defer func() {
			if p := recover(); p != nil {
				out = execOutcome{err: fmt.Errorf("internal error in the interpreter: %v", p)}
			}
			done <- out
		}()
		out.globals, out.err = prog.Init(thread, predeclared)
	}()
	select {
	case out := <-done:
		return out, true
	case <-rs.ctx.Done():
	}
	select {
	case out := <-done:
		return out, true
	case <-time.After(stuckGrace):
		return execOutcome{}, false
	}
}

// runState is what the builtins and tools of one run share.
type runState struct {
	ctx    context.Context
	tools  *Registry
	limits Limits
	meter  *meter

	mu        sync.Mutex
	out       strings.Builder
	truncated bool
	stepsHit  bool
	calls     int
	callsHit  bool
}

// countCalls counts n tool calls about to start; past Limits.MaxToolCalls
// it is the error that stops the program.
func (rs *runState) countCalls(n int) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.calls += n
	if rs.calls > rs.limits.MaxToolCalls {
		rs.callsHit = true
		return fmt.Errorf("tool call limit: the program made more than %d tool calls; call fewer tools (e.g. ask for more per call)", rs.limits.MaxToolCalls)
	}
	return nil
}

func (rs *runState) newThread() *starlark.Thread {
	thread := &starlark.Thread{Name: "codemode", Print: rs.print}
	rs.meter = &meter{ctx: rs.ctx, reason: rs.cancelReason, thread: thread, max: rs.limits.MaxAllocBytes, maxSteps: rs.limits.MaxSteps}
	thread.SetLocal(meterKey, rs.meter)
	rs.meter.capSteps()
	thread.OnMaxSteps = func(t *starlark.Thread) {
		if rs.meter.stepsExhaustedBudget() {
			rs.meter.exceeded = true
			t.Cancel(fmt.Sprintf("memory limit: the program's %d execution steps and what it built reached its budget of %d bytes (each step is charged %d bytes, for what a step can add to a value); build less, or keep fewer values", t.Steps, rs.limits.MaxAllocBytes, stepBytes))
			return
		}
		rs.mu.Lock()
		rs.stepsHit = true
		rs.mu.Unlock()
		t.Cancel(fmt.Sprintf("step limit: the program ran %d execution steps without finishing; loop over less, or call fewer tools", rs.limits.MaxSteps))
	}
	return thread
}

func (rs *runState) predeclared() starlark.StringDict {
	env := universe()
	env["is_error"] = starlark.NewBuiltin("is_error", isErrorBuiltin)
	env["parallel_map"] = starlark.NewBuiltin("parallel_map", rs.parallelMap)
	env[binopName] = starlark.NewBuiltin(binopName, binopBuiltin)
	env[augcheckName] = starlark.NewBuiltin(augcheckName, augcheckBuiltin)
	env[attrName] = starlark.NewBuiltin(attrName, attrBuiltin)
	env[builtName] = starlark.NewBuiltin(builtName, builtBuiltin)
	env[slicedName] = starlark.NewBuiltin(slicedName, slicedBuiltin)
	for _, name := range rs.tools.Names() {
		t, _ := rs.tools.lookup(name)
		env[name] = &toolValue{tool: t, run: rs}
	}
	return env
}

func (rs *runState) cancelReason() string {
	if errors.Is(rs.ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("wall time limit: the program ran longer than %s", rs.limits.WallTime)
	}
	return "run cancelled"
}

// stopIfDone cancels the thread at once when the run's context ended
// during a tool call, so that the program does not go on with the
// tool's "context deadline exceeded" as if it were an ordinary failure.
func (rs *runState) stopIfDone(thread *starlark.Thread) {
	if rs.ctx.Err() != nil {
		thread.Cancel(rs.cancelReason())
	}
}

// print keeps output up to the cap and notes, once, that it cut the rest.
func (rs *runState) print(_ *starlark.Thread, msg string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.truncated {
		return
	}
	room := rs.limits.MaxOutputBytes - rs.out.Len()
	if len(msg)+1 <= room {
		rs.out.WriteString(msg)
		rs.out.WriteByte('\n')
		return
	}
	rs.out.WriteString(msg[:max(room, 0)])
	fmt.Fprintf(&rs.out, "\n[output truncated at %d bytes]\n", rs.limits.MaxOutputBytes)
	rs.truncated = true
}

func (rs *runState) output() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.out.String()
}

// toolResult converts what a tool returned for the program: its value,
// charged to the memory budget, or an error value.
func (rs *runState) toolResult(tool string, res any, err error) (starlark.Value, error) {
	if err != nil {
		return &errorValue{tool: tool, message: err.Error()}, nil
	}
	v, err := fromGo(res)
	if err != nil {
		return &errorValue{tool: tool, message: err.Error()}, nil
	}
	if err := rs.meter.charge(textSize(v, rs.meter.left()), "the result of "+tool); err != nil {
		return nil, err
	}
	return v, nil
}

func isErrorBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
		return nil, err
	}
	_, isErr := x.(*errorValue)
	return starlark.Bool(isErr), nil
}

// syntaxError turns a parse or resolve error into an *Error with the
// position of the first problem.
func syntaxError(err error) *Error {
	var se syntax.Error
	if errors.As(err, &se) {
		return &Error{Kind: KindSyntax, Line: int(se.Pos.Line), Col: int(se.Pos.Col), Msg: se.Msg}
	}
	var rl resolve.ErrorList
	if errors.As(err, &rl) && len(rl) > 0 {
		return &Error{Kind: KindSyntax, Line: int(rl[0].Pos.Line), Col: int(rl[0].Pos.Col), Msg: rl[0].Msg}
	}
	return &Error{Kind: KindSyntax, Msg: err.Error()}
}

// rewrittenFrames hides the builtins rewrite.go inserted from the
// backtrace the model sees: the error is the operator's, on its line.
var rewrittenFrames = strings.NewReplacer(
	"Error in "+binopName+": ", "Error: ",
	"Error in "+augcheckName+": ", "Error: ",
	"Error in "+attrName+": ", "Error: ",
	"Error in "+builtName+": ", "Error: ",
	"Error in "+slicedName+": ", "Error: ",
)

// runError turns an execution error into an *Error at the innermost line
// of the program, telling limits from the program's own failures.
func (rs *runState) runError(err error) *Error {
	e := &Error{Kind: KindRuntime, Msg: err.Error()}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		e.Msg = ee.Msg
		e.Backtrace = rewrittenFrames.Replace(ee.Backtrace())
		for i := range ee.CallStack {
			if pos := ee.CallStack.At(i).Pos; pos.IsValid() && pos.Filename() == fileName {
				e.Line, e.Col = int(pos.Line), int(pos.Col)
				break
			}
		}
	}
	e.Msg = strings.TrimPrefix(e.Msg, "Starlark computation cancelled: ")
	rs.mu.Lock()
	stepsHit, callsHit := rs.stepsHit, rs.callsHit
	rs.mu.Unlock()
	if stepsHit || callsHit || rs.ctx.Err() != nil || rs.meter.exceeded {
		e.Kind = KindLimit
	}
	return e
}
