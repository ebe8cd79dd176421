package codemode

import (
	"fmt"
	"math"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The charging wrappers of memory.go's rules: what each operator, method
// and builtin is charged, before or after it runs.

// precost estimates, before a call, what it may allocate.
type precost func(m *meter, recv starlark.Value, args starlark.Tuple) int64

// callCharge is how one method or builtin is charged: pre runs first (nil:
// nothing up front); then the result is charged its builtSize, or one word
// when keeps says the call hands back a value it was given (or builds
// nothing worth counting).
type callCharge struct {
	pre   precost
	keeps bool
	// chunked: the call inserts its argument's elements into a hash table
	// (set(x), dict(x), update), so it runs a chunk at a time: ints that
	// are equal modulo 2**32 share a hash in go.starlark.net, and one call
	// inserting many of them takes quadratic time where no step is taken.
	chunked bool
	// refuse, when set, refuses arguments whose cost is time rather than
	// memory (int() of a long string of digits), with its reason.
	refuse func(args starlark.Tuple) error
}

// small is a call that allocates at most a few words: a bool, an int, a
// substring sharing its string's bytes, a value that was already there.
var small = callCharge{keeps: true}

// methodCharges lists the methods of str, bytes, list, dict and set whose
// charge differs from the default (the builtSize of the result).
var methodCharges = map[string]callCharge{
	// multiplying: estimated before they run
	"join": {pre: joinCost, keeps: true}, "replace": {pre: replaceCost, keeps: true},
	"format": {pre: formatCost, keeps: true}, "extend": {pre: argsCost, keeps: true},
	"update": {pre: argsTableCost, keeps: true, chunked: true},
	// growing by one entry
	"append": {pre: entryCost, keeps: true}, "insert": {pre: entryCost, keeps: true},
	"add": {pre: entryCost, keeps: true}, "setdefault": {pre: entryCost, keeps: true},
	// building nothing new, or sharing their receiver's bytes
	"count": small, "endswith": small, "startswith": small, "find": small, "rfind": small,
	"index": small, "rindex": small, "isalnum": small, "isalpha": small, "isdigit": small,
	"isspace": small, "istitle": small,
	"strip": small, "lstrip": small, "rstrip": small, "removeprefix": small, "removesuffix": small,
	"partition": small, "rpartition": small, "elems": small, "codepoints": small,
	"elem_ords": small, "codepoint_ords": small, "get": small, "pop": small, "popitem": small,
	"clear": small, "remove": small, "discard": small, "issuperset": small,
	// building a copy they drop: islower and isupper compare with a case
	// mapped copy, issubset makes a set of its argument
	"islower": {pre: recvCost, keeps: true}, "isupper": {pre: recvCost, keeps: true},
	"issubset": {pre: argsTableCost, keeps: true},
	// dict.items builds a pair per entry: charged with the pairs
	"items": {pre: itemsCost, keeps: true},
}

// builtinCharges is the same for the universe builtins.
var builtinCharges = map[string]callCharge{
	"str": {pre: reprCost, keeps: true}, "repr": {pre: reprCost, keeps: true},
	"print": {pre: reprCost, keeps: true}, "fail": {pre: reprCost, keeps: true},
	"list": {pre: lenCost, keeps: true}, "tuple": {pre: lenCost, keeps: true},
	"sorted": {pre: lenCost, keeps: true}, "reversed": {pre: lenCost, keeps: true},
	"enumerate": {pre: pairsCost, keeps: true}, "zip": {pre: pairsCost, keeps: true},
	"dict": {pre: tableCost, keeps: true, chunked: true},
	"set":  {pre: tableCost, keeps: true, chunked: true},
	"int":  {refuse: intDigits}, "bytes": {pre: argsCost},
	"abs": small, "any": small, "all": small, "bool": small, "chr": small, "float": small,
	"hasattr": small, "hash": small, "len": small, "max": small, "min": small,
	"ord": small, "range": small, "type": small,
}

// charged wraps fn (a method bound to recv, or a builtin; recv nil) so
// that a call is charged by c: lazy iterables among the arguments are
// materialised first, element by element, so that their size is known.
func charged(name string, recv, fn starlark.Value, c callCharge) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		m := meterOf(thread)
		args, err := materialise(m, name, args)
		if err != nil {
			return nil, err
		}
		if c.refuse != nil {
			if err := c.refuse(args); err != nil {
				m.exceeded = true
				return nil, err
			}
		}
		if c.pre != nil {
			if err := m.charge(c.pre(m, recv, args), name+"()"); err != nil {
				return nil, err
			}
		}
		var v starlark.Value
		if c.chunked {
			v, err = callInChunks(thread, name, recv, fn, args, kwargs)
		} else {
			v, err = starlark.Call(thread, fn, args, kwargs)
		}
		if err != nil {
			return nil, err
		}
		after := int64(wordBytes)
		if !c.keeps {
			after = builtSize(v)
		}
		return v, m.charge(after, name+"()")
	})
}

// insertChunk is how many elements callInChunks inserts between two looks
// at the run's context.
const insertChunk = 256

// callInChunks runs set(x), dict(x) or r.update(x) as an empty value (or
// r) updated with insertChunk elements of x at a time, stopping between
// chunks when the run is over. Other argument shapes run as one call.
func callInChunks(thread *starlark.Thread, name string, recv, fn starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	seq, ok := starlark.Value(nil), false
	if len(args) == 1 {
		_, isMap := args[0].(starlark.IterableMapping)
		seq, ok = args[0].(starlark.Indexable)
		ok = ok && !isMap
	}
	if !ok {
		return starlark.Call(thread, fn, args, kwargs)
	}
	x := seq.(starlark.Indexable)
	target, update := recv, fn
	if recv == nil { // set(x) or dict(x): start empty, update by chunks
		v, err := starlark.Call(thread, fn, nil, nil)
		if err != nil {
			return nil, err
		}
		target = v
		if update, err = target.(starlark.HasAttrs).Attr("update"); err != nil {
			return nil, err
		}
	}
	m := meterOf(thread)
	for lo := 0; lo < x.Len(); lo += insertChunk {
		if err := m.stopped(); err != nil {
			return nil, err
		}
		hi := min(lo+insertChunk, x.Len())
		chunk := make(starlark.Tuple, 0, hi-lo)
		for i := lo; i < hi; i++ {
			chunk = append(chunk, x.Index(i))
		}
		if _, err := starlark.Call(thread, update, starlark.Tuple{chunk}, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(kwargs) > 0 { // last, as in one call: dict(pairs, k=v) keeps v for k
		if _, err := starlark.Call(thread, update, nil, kwargs); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if recv != nil {
		return starlark.None, nil
	}
	return target, nil
}

// materialise replaces the arguments that are iterables of unknown length
// (s.codepoints(), say) by tuples, charging each element as it comes and
// stopping when the run is over.
func materialise(m *meter, name string, args starlark.Tuple) (starlark.Tuple, error) {
	var out starlark.Tuple
	for i, a := range args {
		it, lazy := a.(starlark.Iterable)
		if _, sized := a.(starlark.Sequence); !lazy || sized {
			continue
		}
		if out == nil {
			out = append(starlark.Tuple(nil), args...)
		}
		var elems starlark.Tuple
		iter := it.Iterate()
		var x starlark.Value
		for iter.Next(&x) {
			if err := m.stopped(); err != nil {
				iter.Done()
				return nil, err
			}
			if err := m.charge(wordBytes+builtSize(x), name+"() of "+a.Type()); err != nil {
				iter.Done()
				return nil, err
			}
			elems = append(elems, x)
		}
		iter.Done()
		out[i] = elems
	}
	if out == nil {
		return args, nil
	}
	return out, nil
}

func joinCost(_ *meter, recv starlark.Value, args starlark.Tuple) int64 {
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

func replaceCost(_ *meter, recv starlark.Value, args starlark.Tuple) int64 {
	s, sOK := recv.(starlark.String)
	if len(args) < 2 || !sOK {
		return 0
	}
	old, _ := args[0].(starlark.String)
	n := int64(strings.Count(string(s), string(old)))
	return int64(len(s)) + mulSat(n, sizeOf(args[1]))
}

func formatCost(m *meter, recv starlark.Value, args starlark.Tuple) int64 {
	s, _ := recv.(starlark.String)
	fields := int64(strings.Count(string(s), "{") + 1)
	return int64(len(s)) + mulSat(fields, argsCost(m, recv, args))
}

func argsCost(_ *meter, _ starlark.Value, args starlark.Tuple) int64 {
	var total int64
	for _, a := range args {
		total += sizeOf(a)
	}
	return total
}

func recvCost(_ *meter, recv starlark.Value, _ starlark.Tuple) int64 { return sizeOf(recv) }

func entryCost(*meter, starlark.Value, starlark.Tuple) int64 { return entryBytes }

// argsTableCost is dict.update or set.update: an entry per element given.
func argsTableCost(_ *meter, _ starlark.Value, args starlark.Tuple) int64 {
	var total int64
	for _, a := range args {
		if s, ok := a.(starlark.Sequence); ok {
			total += mulSat(int64(s.Len()), entryBytes)
		}
	}
	return total
}

func itemsCost(_ *meter, recv starlark.Value, _ starlark.Tuple) int64 {
	return sizeOf(recv) + pairsCost(nil, nil, starlark.Tuple{recv})
}

// lenCost is a collection made from its arguments' elements.
func lenCost(_ *meter, _ starlark.Value, args starlark.Tuple) int64 {
	var cost int64
	for _, a := range args {
		if s, ok := a.(starlark.Sequence); ok {
			cost += mulSat(int64(s.Len()), 2*wordBytes)
		}
	}
	return cost
}

// pairsCost is a list of tuples, one per element (enumerate, zip).
func pairsCost(_ *meter, _ starlark.Value, args starlark.Tuple) int64 {
	var n int64
	for _, a := range args {
		if s, ok := a.(starlark.Sequence); ok {
			n = max(n, int64(s.Len()))
		}
	}
	return mulSat(n, int64(len(args)+3)*wordBytes)
}

func tableCost(_ *meter, _ starlark.Value, args starlark.Tuple) int64 {
	cost := int64(tableBytes)
	for _, a := range args {
		if s, ok := a.(starlark.Sequence); ok {
			cost += mulSat(int64(s.Len()), entryBytes)
		}
	}
	return cost
}

// maxIntDigits bounds int() of a string: parsing is quadratic inside
// math/big (Python caps it at 4300 digits for the same reason).
const maxIntDigits = 4300

func intDigits(args starlark.Tuple) error {
	if len(args) > 0 {
		if s, ok := args[0].(starlark.String); ok && len(s) > maxIntDigits {
			return fmt.Errorf("memory limit: int() of a string of %d characters, over the limit of %d digits", len(s), maxIntDigits)
		}
	}
	return nil
}

// reprCost is the length of the text of args, counted only up to what is
// left of the budget: lists that share elements can print far larger than
// they are.
func reprCost(m *meter, _ starlark.Value, args starlark.Tuple) int64 {
	left := m.left()
	var cost int64
	for _, a := range args {
		cost += textSize(a, left-cost)
		if cost > left {
			break
		}
	}
	return cost
}

// binaryCost estimates, before it runs, what `x op y` allocates.
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
	case syntax.PIPE, syntax.AMP, syntax.CIRCUMFLEX, syntax.MINUS:
		if isSized(x) {
			return sizeOf(x) + sizeOf(y) // set or dict algebra
		}
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

// maxIntBits bounds the ints a product or a shift may make. Repeated
// squaring doubles an int's size per step, and one multiplication of two
// megabyte-sized ints runs for minutes inside math/big, where neither the
// step limit nor cancellation can reach it.
const maxIntBits = 1 << 16

func checkIntSize(op syntax.Token, x, y starlark.Value) error {
	xi, xOK := x.(starlark.Int)
	yi, yOK := y.(starlark.Int)
	if !xOK || !yOK {
		return nil
	}
	bits := 0
	switch op {
	case syntax.STAR:
		bits = intBits(xi) + intBits(yi)
	case syntax.LTLT:
		shift, _ := yi.Int64()
		bits = intBits(xi) + int(min(max(shift, 0), maxIntBits))
	default:
		return nil
	}
	if bits > maxIntBits {
		return fmt.Errorf("memory limit: `%s` would make an int of about %d bits, over the limit of %d bits", op, bits, maxIntBits)
	}
	return nil
}

func intBits(i starlark.Int) int {
	if _, small := i.Int64(); small {
		return 64
	}
	return i.BigInt().BitLen()
}

var opTokens = map[string]syntax.Token{
	"+": syntax.PLUS, "-": syntax.MINUS, "*": syntax.STAR, "%": syntax.PERCENT,
	"|": syntax.PIPE, "&": syntax.AMP, "^": syntax.CIRCUMFLEX, "<<": syntax.LTLT,
}

// binopBuiltin is __binop(op, x, y): x op y, charged first.
func binopBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, x, y := opTokens[string(args[0].(starlark.String))], args[1], args[2]
	m := meterOf(thread)
	if err := checkIntSize(op, x, y); err != nil {
		m.exceeded = true
		return nil, err
	}
	if err := m.charge(binaryCost(op, x, y, m.left()), "`"+op.String()+"`"); err != nil {
		return nil, err
	}
	return starlark.Binary(op, x, y)
}

// augcheckBuiltin is __augcheck(op, x, y) for `x op= y`: it charges the
// operation and returns y, so the assignment itself keeps Starlark's
// in-place semantics for lists.
func augcheckBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, x, y := opTokens[string(args[0].(starlark.String))], args[1], args[2]
	m := meterOf(thread)
	if err := checkIntSize(op, x, y); err != nil {
		m.exceeded = true
		return nil, err
	}
	cost := binaryCost(op, x, y, m.left())
	if _, isList := x.(*starlark.List); isList && op == syntax.PLUS {
		cost = sizeOf(y) // list += extends in place: only the new elements are new
	}
	if err := m.charge(cost, "`"+op.String()+"=`"); err != nil {
		return nil, err
	}
	return y, nil
}

// builtBuiltin is __built(v): v, which the program just built (a slice, a
// dict literal, a comprehension), charged its size.
func builtBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	v := args[0]
	return v, meterOf(thread).charge(builtSize(v), "building a "+v.Type())
}

// slicedBuiltin is __sliced(x[a:b]): a slice without a step, which for a
// string or bytes shares the original's bytes and costs a header.
func slicedBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	v := args[0]
	switch v.(type) {
	case starlark.String, starlark.Bytes:
		return v, meterOf(thread).charge(wordBytes, "a slice")
	}
	return v, meterOf(thread).charge(builtSize(v), "a slice")
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

// attrBuiltin is __attr(x, name): x.name, with every method wrapped so
// that a call is charged by methodCharges (default: what it built).
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
	if _, isMethod := v.(*starlark.Builtin); !isMethod {
		return v, nil // a field (a tool's error value has some): nothing is built
	}
	return charged(recv.Type()+"."+name, recv, v, methodCharges[name]), nil
}

// universe is Starlark's universe with every builtin wrapped by
// builtinCharges (default: charged what it built).
func universe() starlark.StringDict {
	env := starlark.StringDict{}
	for name, v := range starlark.Universe {
		b, isBuiltin := v.(*starlark.Builtin)
		if !isBuiltin {
			continue
		}
		env[name] = charged(name, nil, b, builtinCharges[name])
	}
	env["getattr"] = starlark.NewBuiltin("getattr", getattrBuiltin)
	return env
}
