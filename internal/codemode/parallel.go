package codemode

import (
	"fmt"
	"sync"

	"go.starlark.net/starlark"
)

// parallelMap is parallel_map(tool, calls): it calls tool (a tool value or
// a tool's name) once per dict of keyword arguments in calls, at most
// Limits.MaxParallel at a time, and returns the results in the order of
// calls; a failed call's slot holds its error value. Only tools run in
// parallel: a Starlark thread is single-goroutine, and tools are where the
// waiting is.
func (rs *runState) parallelMap(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var fn, calls starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "fn", &fn, "calls", &calls); err != nil {
		return nil, err
	}
	tool, err := rs.toolOf(fn)
	if err != nil {
		return nil, err
	}
	bound, err := rs.bindCalls(tool, calls)
	if err != nil {
		return nil, err
	}
	if err := rs.countCalls(len(bound)); err != nil {
		return nil, err // before any starts
	}
	type outcome struct {
		res any
		err error
	}
	outcomes := make([]outcome, len(bound))
	slots := make(chan struct{}, rs.limits.MaxParallel)
	var wg sync.WaitGroup
	for i, a := range bound {
		if err := rs.ctx.Err(); err != nil {
			outcomes[i] = outcome{err: err} // the run is over: start nothing more
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			res, err := tool.call(rs.ctx, a)
			outcomes[i] = outcome{res, err}
		})
	}
	wg.Wait()
	rs.stopIfDone(thread)
	results := make([]starlark.Value, len(outcomes))
	for i, o := range outcomes {
		v, err := rs.toolResult(tool.Name, o.res, o.err)
		if err != nil {
			return nil, err
		}
		results[i] = v
	}
	return starlark.NewList(results), nil
}

func (rs *runState) toolOf(fn starlark.Value) (*Tool, error) {
	switch f := fn.(type) {
	case *toolValue:
		return f.tool, nil
	case starlark.String:
		if t, ok := rs.tools.lookup(string(f)); ok {
			return t, nil
		}
		return nil, fmt.Errorf("parallel_map: unknown tool %q", string(f))
	}
	return nil, fmt.Errorf("parallel_map: the first argument must be a tool or a tool's name, got %s", fn.Type())
}

// bindCalls checks every call's arguments before any runs, so that a bad
// call does not leave the others half done.
func (rs *runState) bindCalls(tool *Tool, calls starlark.Value) ([]map[string]any, error) {
	seq, ok := calls.(starlark.Indexable)
	if !ok {
		return nil, fmt.Errorf("parallel_map: calls must be a list of dicts of keyword arguments, got %s", calls.Type())
	}
	bound := make([]map[string]any, seq.Len())
	for i := range bound {
		d, ok := seq.Index(i).(*starlark.Dict)
		if !ok {
			return nil, fmt.Errorf("parallel_map: calls[%d] must be a dict of keyword arguments, got %s", i, seq.Index(i).Type())
		}
		kwargs := make([]starlark.Tuple, 0, d.Len())
		for _, kv := range d.Items() {
			if _, isStr := kv[0].(starlark.String); !isStr {
				return nil, fmt.Errorf("parallel_map: calls[%d] has a key that is not a string: %s", i, kv[0])
			}
			kwargs = append(kwargs, starlark.Tuple{kv[0], kv[1]})
		}
		a, err := tool.bindArgs(nil, kwargs)
		if err != nil {
			return nil, fmt.Errorf("parallel_map: calls[%d]: %w", i, err)
		}
		bound[i] = a
	}
	return bound, nil
}
