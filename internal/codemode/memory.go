package codemode

import (
	"context"
	"errors"
	"fmt"
	"math"

	"go.starlark.net/starlark"
)

// Memory accounting.
//
// go.starlark.net has no allocator hook (upstream Thread has step counting
// and cancellation, nothing for allocations; the newest version on the
// module proxy still has none), and the Go heap is shared by every job in
// the process, so sampling runtime.MemStats cannot tell one program from
// another. Instead everything a program can allocate is charged against a
// per-run byte budget (Limits.MaxAllocBytes), by one of three rules:
//
//   - every execution step is charged stepBytes: a step that is not a call
//     (a comprehension's append, d[k] = v, a literal, a loop target) adds
//     at most a few words to a live value, so values grown one piece per
//     step are charged as they grow. The budget caps the thread's step
//     limit accordingly (meter.capSteps);
//   - every call of a builtin or a method, and every operator that builds
//     a value (+ - * % | & ^ <<, slices, dict literals and
//     comprehensions), goes through a charging wrapper (charges.go; the
//     operators and literals reach it through rewrite.go). Calls that can
//     multiply a size (x * n, str.join, replace, format, str() of shared
//     lists, ...) are charged an estimate before they run, so they fail
//     before allocating; every other call is charged what it built, after
//     it ran (its output is at most linear in inputs already charged, so
//     the overshoot is at most one such value); calls that hand back a
//     value they were given (d.get, max, s.strip, which shares its bytes)
//     are charged a word;
//   - every tool result is charged its size as text.
//
// Apart from the budget, ints are capped in size (maxIntBits) and int()
// of a string in digits (maxIntDigits), since their cost is time inside
// math/big.
//
// The budget is cumulative (garbage counts), which errs on the side of
// stopping: building a string with += in a loop copies it every time and
// is charged every time, so the dialect rules say to join a list instead.
// Reaching the live values to count only those is not possible from
// outside the interpreter (temporaries live on its operand stack).
// memory_guard_test.go measures the heap a run really takes against its
// budget, per operation and for every method and builtin.

const (
	wordBytes  = 16  // one boxed Starlark value: a list slot, a string header
	entryBytes = 64  // one dict or set entry, with its share of the table
	tableBytes = 512 // an empty dict or set: its first bucket is inline
	// stepBytes is charged per execution step: about what one step that
	// is not a call can add to a live value (a list slot and its boxed
	// element, or a third of a dict entry, as measured by the growth
	// cases of memory_guard_test.go).
	stepBytes = 16
)

// meter is one run's memory budget.
type meter struct {
	ctx      context.Context
	reason   func() string // why ctx ended, for the program
	thread   *starlark.Thread
	charged  int64 // bytes charged by calls and operators
	max      int64
	maxSteps uint64 // Limits.MaxSteps
	exceeded bool   // a charge was refused: the run stopped on the limit
}

// used is what the run has spent: its charges and its steps.
func (m *meter) used() int64 {
	return m.charged + int64(min(m.thread.Steps, math.MaxInt64/stepBytes))*stepBytes
}

// stopped is the run's end, seen from inside a long builtin call.
func (m *meter) stopped() error {
	if m.ctx.Err() != nil {
		return errors.New(m.reason())
	}
	return nil
}

func (m *meter) left() int64 { return m.max - m.used() }

func (m *meter) charge(n int64, what string) error {
	used := m.used()
	if n < 0 || n > math.MaxInt64-used {
		n = math.MaxInt64 - used
	}
	if used+n > m.max {
		m.exceeded = true
		return fmt.Errorf("memory limit: %s would allocate about %d bytes, over the program's budget of %d bytes (%d used)", what, n, m.max, used)
	}
	m.charged += n
	m.capSteps()
	return nil
}

// capSteps lowers the thread's step limit to where the steps alone would
// spend what the charges left of the budget.
func (m *meter) capSteps() {
	room := max((m.max-m.charged)/stepBytes, 1) // 0 would mean no limit
	m.thread.SetMaxExecutionSteps(min(m.maxSteps, uint64(room)))
}

// stepsExhaustedBudget reports whether the thread stopped on the step
// limit capSteps set rather than on Limits.MaxSteps.
func (m *meter) stepsExhaustedBudget() bool {
	return m.thread.Steps < m.maxSteps
}

// sizeOf is the shallow size of a value: what copying it into a new value
// costs.
func sizeOf(v starlark.Value) int64 {
	switch x := v.(type) {
	case starlark.String:
		return int64(len(x))
	case starlark.Bytes:
		return int64(len(x))
	case starlark.Int:
		if _, ok := x.Int64(); ok {
			return 8
		}
		return int64(x.BigInt().BitLen()/8 + 8)
	case *starlark.Dict:
		return tableBytes + int64(x.Len())*entryBytes
	case *starlark.Set:
		return tableBytes + int64(x.Len())*entryBytes
	case starlark.Sequence:
		return int64(x.Len()) * wordBytes
	}
	return wordBytes
}

// builtSize is what a value a call just built took: its own bytes, and a
// box per element (the elements' data may be shared with the inputs, as
// a substring shares its string's bytes).
func builtSize(v starlark.Value) int64 {
	switch x := v.(type) {
	case starlark.String, starlark.Bytes:
		return sizeOf(x) + wordBytes
	case *starlark.List, starlark.Tuple:
		return int64(x.(starlark.Sequence).Len())*2*wordBytes + wordBytes
	}
	return sizeOf(v)
}

func isSized(v starlark.Value) bool {
	switch v.(type) {
	case starlark.String, starlark.Bytes, starlark.Sequence:
		return true
	}
	return false
}

func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// textSize estimates len(str(v)), stopping once it passes limit.
func textSize(v starlark.Value, limit int64) int64 {
	switch x := v.(type) {
	case starlark.String:
		return int64(len(x)) + 2
	case starlark.Bytes:
		return int64(len(x)) + 3
	case *starlark.Dict:
		var n int64
		for _, kv := range x.Items() {
			n += textSize(kv[0], limit-n) + textSize(kv[1], limit-n) + 4
			if n > limit {
				return n
			}
		}
		return n + 2
	case starlark.Indexable:
		var n int64
		for i := range x.Len() {
			n += textSize(x.Index(i), limit-n) + 2
			if n > limit {
				return n
			}
		}
		return n + 2
	}
	return sizeOf(v) * 3
}

const meterKey = "codemode.meter"

func meterOf(thread *starlark.Thread) *meter {
	return thread.Local(meterKey).(*meter)
}
