package codemode

import (
	"fmt"
	"math"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Memory accounting.
//
// go.starlark.net has no allocator hook (upstream Thread has step counting
// and cancellation, nothing for allocations), and the Go heap is shared by
// every job in the process, so sampling runtime.MemStats cannot tell one
// program from another. Instead every operation that can build a large
// value in one step is charged, before it runs, against a per-run byte
// budget (Limits.MaxAllocBytes):
//
//   - the binary operators +, * and % and their augmented forms, which the
//     compiler reaches through rewritten calls (see rewrite.go), so
//     "a" * 10**9 and a doubling loop fail before allocating;
//   - the methods that can multiply a size (str.join, replace, ljust, rjust,
//     center, zfill, format, expandtabs, split; list.extend; dict.update),
//     reached through a rewritten attribute lookup;
//   - the builtins that materialise an iterable (list, tuple, sorted, dict,
//     enumerate, zip, reversed, set) or write a value as text (str, repr,
//     print: lists that share elements print far larger than they are);
//   - every tool result;
//   - and, apart from the budget, products of ints are capped in size
//     (maxIntBits), since their cost is time inside math/big.
//
// The budget is cumulative (garbage counts), which errs on the side of
// stopping: building a string with += in a loop copies it every time and
// is charged every time, so the dialect rules say to join a list instead.
// Reaching the live values to count only those is not possible from
// outside the interpreter (temporaries live on its operand stack). Values built one element at a time (append, comprehensions)
// cost at least one execution step per element, so the step limit bounds
// them to a few words per step.

const wordBytes = 16 // one boxed Starlark value in a list or tuple

type budget struct {
	used, max int64
	exceeded  bool // a charge was refused: the run stopped on the limit
}

func (b *budget) charge(n int64, what string) error {
	if n < 0 || n > math.MaxInt64-b.used {
		n = math.MaxInt64 - b.used
	}
	if b.used+n > b.max {
		b.exceeded = true
		return fmt.Errorf("memory limit: %s would allocate about %d bytes, over the program's budget of %d bytes (%d used)", what, n, b.max, b.used)
	}
	b.used += n
	return nil
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
		return int64(x.Len()) * 3 * wordBytes
	case starlark.Sequence:
		return int64(x.Len()) * wordBytes
	}
	return wordBytes
}

func isSized(v starlark.Value) bool {
	switch v.(type) {
	case starlark.String, starlark.Bytes, starlark.Sequence:
		return true
	}
	return false
}

// binaryCost estimates the bytes `x op y` allocates.
func binaryCost(op syntax.Token, x, y starlark.Value, left int64) int64 {
	switch op {
	case syntax.PLUS:
		return sizeOf(x) + sizeOf(y)
	case syntax.PERCENT:
		if _, ok := x.(starlark.String); ok {
			return sizeOf(x) + textSize(y, left)
		}
	case syntax.STAR:
		if n, ok := repeatCount(x, y); ok {
			seq := x
			if _, xIsInt := x.(starlark.Int); xIsInt {
				seq = y
			}
			return mulSat(sizeOf(seq), n)
		}
		return sizeOf(x) + sizeOf(y)
	}
	return 0
}

// repeatCount returns n when x*y repeats a sized value n times.
func repeatCount(x, y starlark.Value) (int64, bool) {
	n, seqOK := y.(starlark.Int)
	if !seqOK || !isSized(x) {
		n, seqOK = x.(starlark.Int)
		if !seqOK || !isSized(y) {
			return 0, false
		}
	}
	i, ok := n.Int64()
	if !ok {
		return math.MaxInt64, true
	}
	return max(i, 0), true
}

func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// maxIntBits bounds the ints a product may make. Repeated squaring
// doubles an int's size per step, and one multiplication of two
// megabyte-sized ints runs for minutes inside math/big, where neither the
// step limit nor cancellation can reach it.
const maxIntBits = 1 << 16

func checkIntProduct(op syntax.Token, x, y starlark.Value) error {
	xi, xOK := x.(starlark.Int)
	yi, yOK := y.(starlark.Int)
	if op != syntax.STAR || !xOK || !yOK {
		return nil
	}
	if bits := intBits(xi) + intBits(yi); bits > maxIntBits {
		return fmt.Errorf("memory limit: `*` would make an int of about %d bits, over the limit of %d bits", bits, maxIntBits)
	}
	return nil
}

func intBits(i starlark.Int) int {
	if _, small := i.Int64(); small {
		return 64
	}
	return i.BigInt().BitLen()
}

var opTokens = map[string]syntax.Token{"+": syntax.PLUS, "*": syntax.STAR, "%": syntax.PERCENT}

// binopBuiltin is __binop(op, x, y): x op y, charged first.
func binopBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, x, y := opTokens[string(args[0].(starlark.String))], args[1], args[2]
	b := budgetOf(thread)
	if err := checkIntProduct(op, x, y); err != nil {
		b.exceeded = true
		return nil, err
	}
	if err := b.charge(binaryCost(op, x, y, b.max-b.used), "`"+op.String()+"`"); err != nil {
		return nil, err
	}
	return starlark.Binary(op, x, y)
}

// augcheckBuiltin is __augcheck(op, x, y) for `x op= y`: it charges the
// operation and returns y, so the assignment itself keeps Starlark's
// in-place semantics for lists.
func augcheckBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, x, y := opTokens[string(args[0].(starlark.String))], args[1], args[2]
	b := budgetOf(thread)
	cost := binaryCost(op, x, y, b.max-b.used)
	if _, isList := x.(*starlark.List); isList && op == syntax.PLUS {
		cost = sizeOf(y) // list += extends in place: only the new elements are new
	}
	if err := b.charge(cost, "`"+op.String()+"=`"); err != nil {
		return nil, err
	}
	return y, nil
}

// getattrBuiltin is getattr(x, name[, default]) through the same wrapping
// as x.name, so that getattr cannot reach an uncharged method.
func getattrBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var recv, dflt starlark.Value
	var name string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &recv, &name, &dflt); err != nil {
		return nil, err
	}
	v, err := attrBuiltin(thread, b, starlark.Tuple{recv, starlark.String(name)}, nil)
	if err != nil && dflt != nil {
		return dflt, nil
	}
	return v, err
}

// methodCosts estimates, per method name, what a call allocates from its
// receiver and arguments.
var methodCosts = map[string]func(recv starlark.Value, args starlark.Tuple) int64{
	"join":       joinCost,
	"replace":    replaceCost,
	"ljust":      widthCost,
	"rjust":      widthCost,
	"center":     widthCost,
	"zfill":      widthCost,
	"format":     formatCost,
	"expandtabs": expandtabsCost,
	"split":      splitCost,
	"extend":     argsCost,
	"update":     argsCost,
}

func joinCost(recv starlark.Value, args starlark.Tuple) int64 {
	if len(args) == 0 {
		return 0
	}
	seq, ok := args[0].(starlark.Indexable)
	if !ok {
		return sizeOf(args[0])
	}
	total := mulSat(sizeOf(recv), int64(seq.Len()))
	for i := range seq.Len() {
		total += sizeOf(seq.Index(i))
	}
	return total
}

func replaceCost(recv starlark.Value, args starlark.Tuple) int64 {
	s, sOK := recv.(starlark.String)
	if len(args) < 2 || !sOK {
		return 0
	}
	old, _ := args[0].(starlark.String)
	n := int64(strings.Count(string(s), string(old)))
	return int64(len(s)) + mulSat(n, sizeOf(args[1]))
}

func widthCost(_ starlark.Value, args starlark.Tuple) int64 {
	if len(args) == 0 {
		return 0
	}
	if w, ok := args[0].(starlark.Int); ok {
		if i, ok := w.Int64(); ok {
			return i
		}
		return math.MaxInt64
	}
	return 0
}

func formatCost(recv starlark.Value, args starlark.Tuple) int64 {
	s, _ := recv.(starlark.String)
	fields := int64(strings.Count(string(s), "{") + 1)
	return int64(len(s)) + mulSat(fields, argsCost(recv, args))
}

func expandtabsCost(recv starlark.Value, args starlark.Tuple) int64 {
	s, _ := recv.(starlark.String)
	tab := int64(8)
	if len(args) > 0 {
		if w := widthCost(recv, args); w > 0 {
			tab = w
		}
	}
	return int64(len(s)) + mulSat(int64(strings.Count(string(s), "\t")), tab)
}

func splitCost(recv starlark.Value, args starlark.Tuple) int64 {
	s, _ := recv.(starlark.String)
	parts := int64(len(s)/2 + 1)
	if len(args) > 0 {
		if sep, ok := args[0].(starlark.String); ok && sep != "" {
			parts = int64(strings.Count(string(s), string(sep)) + 1)
		}
	}
	return parts * 2 * wordBytes
}

func argsCost(_ starlark.Value, args starlark.Tuple) int64 {
	var total int64
	for _, a := range args {
		total += sizeOf(a)
	}
	return total
}

// attrBuiltin is __attr(x, name): x.name, with the methods listed in
// methodCosts wrapped so that a call is charged before it runs.
func attrBuiltin(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	recv, name := args[0], string(args[1].(starlark.String))
	ha, ok := recv.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	v, err := ha.Attr(name)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", recv.Type(), name)
	}
	cost, risky := methodCosts[name]
	if !risky {
		return v, nil
	}
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := budgetOf(thread).charge(cost(recv, args), recv.Type()+"."+name); err != nil {
			return nil, err
		}
		return starlark.Call(thread, v, args, kwargs)
	}), nil
}

// chargedBuiltins replaces the universe builtins that build a value in
// one step (a collection from an iterable, or a string from any value) with
// versions charged first.
var chargedBuiltins = map[string]func(b *budget, args starlark.Tuple) int64{
	"list": lenCost, "tuple": lenCost, "sorted": lenCost, "dict": lenCost,
	"enumerate": lenCost, "zip": lenCost, "reversed": lenCost, "set": lenCost,
	"str": reprCost, "repr": reprCost, "print": reprCost,
}

func lenCost(_ *budget, args starlark.Tuple) int64 {
	var cost int64
	for _, a := range args {
		if s, ok := a.(starlark.Sequence); ok {
			cost += mulSat(int64(s.Len()), 3*wordBytes)
		}
	}
	return cost
}

// reprCost is the length of the text of args, counted only up to what is
// left of the budget: lists that share elements can print far larger than
// they are.
func reprCost(b *budget, args starlark.Tuple) int64 {
	left := b.max - b.used
	var cost int64
	for _, a := range args {
		cost += textSize(a, left-cost)
		if cost > left {
			break
		}
	}
	return cost
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

func chargedBuiltin(name string) *starlark.Builtin {
	orig, cost := starlark.Universe[name], chargedBuiltins[name]
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		b := budgetOf(thread)
		if err := b.charge(cost(b, args), name+"()"); err != nil {
			return nil, err
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

const budgetKey = "codemode.budget"

func budgetOf(thread *starlark.Thread) *budget {
	return thread.Local(budgetKey).(*budget)
}
