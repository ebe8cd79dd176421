package codemode_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/codemode"
	"go.starlark.net/starlark"
)

// These tests run programs that would allocate far more than their memory
// budget if an operation went uncharged, and measure what the process
// really allocated during the run (runtime.MemStats.TotalAlloc counts
// every byte the Go heap handed out, garbage included). They are not
// parallel, so that the figure is this run's alone.

const guardBudget = 16 << 20

// allowed is what a run may allocate, all told, against a budget:
// estimates are per operation, so a few budgets' worth is the bound the
// charging promises, far below the gigabytes an uncharged loop reaches.
func allowed(budget int64) uint64 { return uint64(6*budget + 4<<20) }

// allocatedBy runs code under budget and returns the run's error and the
// bytes the heap handed out meanwhile.
func allocatedBy(t *testing.T, code string, budget int64) (error, uint64) {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := codemode.Run(context.Background(), code, codemode.NewRegistry(),
		codemode.Limits{MaxAllocBytes: budget, MaxSteps: 1 << 40, WallTime: time.Minute})
	runtime.ReadMemStats(&after)
	return err, after.TotalAlloc - before.TotalAlloc
}

func wantStoppedByMemory(t *testing.T, code string) {
	t.Helper()
	err, got := allocatedBy(t, code, guardBudget)
	var ce *codemode.Error
	if !errors.As(err, &ce) || ce.Kind != codemode.KindLimit || !strings.Contains(ce.Msg, "memory limit") {
		t.Errorf("want a memory limit error, got %v (allocated %d MiB)", err, got>>20)
	}
	if got > allowed(guardBudget) {
		t.Errorf("the run allocated %d MiB against a budget of %d MiB (allowed %d MiB)", got>>20, guardBudget>>20, allowed(guardBudget)>>20)
	}
}

// TestMemoryReviewOperations are the operations the review built a 3 GB
// worker from: each keeps copies alive in a list, 1 MiB a copy.
func TestMemoryReviewOperations(t *testing.T) {
	for _, tc := range []struct{ name, code string }{
		{"slice reversed", "s = 'ab' * 500000\nkeep = [s[::-1] for _ in range(512)]"},
		{"slice with a step", "s = 'ab' * 500000\nkeep = [s[::2] for _ in range(1024)]"},
		{"list slice", "l = [1] * 60000\nkeep = [l[::-1] for _ in range(512)]"},
		{"upper", "s = 'ab' * 500000\nkeep = [s.upper() for _ in range(512)]"},
		{"splitlines", "s = 'a\\n' * 500000\nkeep = [s.splitlines() for _ in range(64)]"},
		{"rsplit", "s = 'a,' * 500000\nkeep = [s.rsplit(',') for _ in range(64)]"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantStoppedByMemory(t, tc.code) })
	}
}

// TestMemoryGrowthOneStepAtATime: values that grow by a small piece per
// execution step (comprehensions, dict stores, loop targets, literals).
func TestMemoryGrowthOneStepAtATime(t *testing.T) {
	for _, tc := range []struct{ name, code string }{
		{"list comprehension of ints", "keep = [i for i in range(20000000)]"},
		{"list comprehension of dicts", "keep = [{} for i in range(5000000)]"},
		{"dict comprehension", "keep = {i: i for i in range(5000000)}"},
		{"dict literal with entries", "keep = [{'a': i, 'b': i, 'c': i} for i in range(5000000)]"},
		{"dict store in a loop", "d = {}\nfor i in range(5000000):\n    d[i] = i\n"},
		{"a loop target that grows a dict", "d = {}\nfor d[len(d)] in range(5000000):\n    pass\n"},
		{"lambdas", "keep = [lambda: i for i in range(5000000)]"},
		{"tuples", "keep = [(i, i, i) for i in range(5000000)]"},
		{"string elements", "s = 'ab' * 500000\nkeep = [s[i] for i in range(len(s))]\nkeep2 = [s[i] for i in range(len(s))]\nkeep3 = [s[i] for i in range(len(s))]"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantStoppedByMemory(t, tc.code) })
	}
}

// allocatingCalls is one call per method of Starlark's string, bytes,
// list, dict and set, and per universe builtin, written to build as much
// as it can from a value of about 250 KB (s a string, l a list, d a dict,
// st a set, b bytes). TestMemoryEveryAllocatingCall checks that the table
// covers every method and builtin the interpreter has, so a newer
// go.starlark.net with a new method fails here until it is charged.
var allocatingCalls = map[string]string{
	// str
	"str.capitalize": "s.capitalize()", "str.codepoint_ords": "list(s.codepoint_ords())",
	"str.codepoints": "list(s.codepoints())", "str.count": "s.count('a')",
	"str.elem_ords": "list(s.elem_ords())", "str.elems": "list(s.elems())",
	"str.endswith": "s.endswith('a')", "str.find": "s.find('z')", "str.format": "('{}' * 1000).format(*([s] * 1000))",
	"str.index": "s.index('a')", "str.isalnum": "s.isalnum()", "str.isalpha": "s.isalpha()",
	"str.isdigit": "s.isdigit()", "str.islower": "s.islower()", "str.isspace": "s.isspace()",
	"str.istitle": "s.istitle()", "str.isupper": "s.isupper()", "str.join": "s.join([s, s, s])",
	"str.lower": "s.upper().lower()", "str.lstrip": "s.lstrip()", "str.partition": "s.partition('b')",
	"str.removeprefix": "s.removeprefix('a')", "str.removesuffix": "s.removesuffix('b')",
	"str.replace": "s.replace('a', 'xyz')", "str.rfind": "s.rfind('z')", "str.rindex": "s.rindex('a')",
	"str.rpartition": "s.rpartition('a')", "str.rsplit": "s.rsplit('b')", "str.rstrip": "s.rstrip()",
	"str.split": "s.split('b')", "str.splitlines": "s.replace('b', '\\n').splitlines()",
	"str.startswith": "s.startswith('a')", "str.strip": "s.strip()", "str.title": "s.title()",
	"str.upper": "s.upper()",
	// bytes
	"bytes.elems": "list(b.elems())",
	// list
	"list.append": "l.append(s)", "list.clear": "list(l).clear()", "list.extend": "list(l).extend(l)",
	"list.index": "l.index(1)", "list.insert": "l.insert(0, s)", "list.pop": "list(l).pop()",
	"list.remove": "list(l).remove(1)",
	// dict
	"dict.clear": "dict(d).clear()", "dict.get": "d.get(1)", "dict.items": "d.items()",
	"dict.keys": "d.keys()", "dict.pop": "dict(d).pop(1)", "dict.popitem": "dict(d).popitem()",
	"dict.setdefault": "dict(d).setdefault(-1, s)", "dict.update": "dict(d).update(d)",
	"dict.values": "d.values()",
	// set
	"set.add": "set(st).add(-1)", "set.clear": "set(st).clear()", "set.difference": "st.difference([1])",
	"set.discard": "set(st).discard(1)", "set.intersection": "st.intersection(st)",
	"set.issubset": "st.issubset(st)", "set.issuperset": "st.issuperset(st)", "set.pop": "set(st).pop()",
	"set.remove": "set(st).remove(1)", "set.symmetric_difference": "st.symmetric_difference([-1])",
	"set.union": "st.union(st)", "set.update": "set(st).update(st)",
	// builtins
	"abs": "abs(-1)", "any": "any(l)", "all": "all(l)", "bool": "bool(l)", "bytes": "bytes(s)",
	"chr": "chr(65)", "dict": "dict(d)", "dir": "dir(s)", "enumerate": "enumerate(l)",
	"fail": "None", "float": "float(1)", "getattr": "getattr(s, 'upper')()", "hasattr": "hasattr(s, 'x')",
	"hash": "hash(s)", "int": "int('1' * 1000)", "len": "len(s)", "list": "list(l)", "max": "max(l)",
	"min": "min(l)", "ord": "ord('a')", "print": "print(s)", "range": "range(1000)", "repr": "repr(s)",
	"reversed": "reversed(l)", "set": "set(l)", "sorted": "sorted(l)", "str": "str(l)",
	"tuple": "tuple(l)", "type": "type(s)", "zip": "zip(l, l)",
	// operators
	"op +": "s + s", "op *": "s * 3", "op %": "'%s%s' % (s, s)", "op |": "st | st",
	"op &": "st & st", "op ^": "st ^ st", "op -": "st - set([1])", "op <<": "(1 << 500) << 500",
	"op slice": "s[::-1]", "op list slice": "l[::-1]", "op tuple slice": "tuple(l)[::-1]",
}

// nonAllocating are the calls that build nothing (or share what they
// were given): 200 of them must run to the end, not be overcharged.
var nonAllocating = map[string]bool{
	"str.count": true, "str.endswith": true, "str.find": true, "str.index": true,
	"str.isalnum": true, "str.isalpha": true, "str.isdigit": true,
	"str.isspace": true, "str.istitle": true, "str.lstrip": true,
	"str.partition": true, "str.removeprefix": true, "str.removesuffix": true, "str.rfind": true,
	"str.rindex": true, "str.rpartition": true, "str.rstrip": true, "str.startswith": true,
	"str.strip": true, "list.index": true, "dict.get": true,
	"set.issuperset": true, "abs": true, "any": true, "all": true, "bool": true, "chr": true,
	"fail": true, "float": true, "hasattr": true, "hash": true, "len": true, "max": true,
	"min": true, "ord": true, "range": true, "type": true, "op slice": false,
}

const allocatingSetup = `s = "ab" * 125000
b = bytes("ab" * 5000)
l = list(range(10000))
d = {i: i for i in range(5000)}
st = set(range(5000))
`

// tableBudget is the budget of the allocatingCalls runs: 200 calls that
// each built 250 KB uncharged would take 50 MB, over allowed(tableBudget).
const tableBudget = 4 << 20

func TestMemoryEveryAllocatingCall(t *testing.T) {
	names := make([]string, 0, len(allocatingCalls))
	for name := range allocatingCalls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		call := allocatingCalls[name]
		t.Run(name, func(t *testing.T) {
			// The call repeated and kept: 50 MB if each built 250 KB uncharged.
			code := allocatingSetup + fmt.Sprintf("keep = []\nfor _ in range(200):\n    keep.append(%s)\n", call)
			err, got := allocatedBy(t, code, tableBudget)
			if got > allowed(tableBudget) {
				t.Errorf("%s: the run allocated %d MiB against a budget of %d MiB (err %v)", call, got>>20, tableBudget>>20, err)
			}
			var ce *codemode.Error
			switch {
			case nonAllocating[name] && err != nil:
				t.Errorf("%s builds nothing, yet 200 calls were stopped: %v", call, err)
			case err != nil && (!errors.As(err, &ce) || ce.Kind != codemode.KindLimit):
				t.Errorf("%s: %v", call, err)
			}
		})
	}
	t.Run("the table names every method and builtin", func(t *testing.T) {
		res, err := codemode.Run(context.Background(), `
out = []
for prefix, v in [("str.", ""), ("bytes.", bytes("")), ("list.", []), ("dict.", {}), ("set.", set())]:
    out.extend([prefix + m for m in dir(v)])
out`, codemode.NewRegistry(), codemode.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Value.([]any) {
			if _, ok := allocatingCalls[m.(string)]; !ok {
				t.Errorf("method %s has no entry in allocatingCalls", m)
			}
		}
		for name := range starlark.Universe {
			if _, ok := allocatingCalls[name]; !ok && name != "None" && name != "True" && name != "False" {
				t.Errorf("builtin %s has no entry in allocatingCalls", name)
			}
		}
	})
}

// TestWallTimeInsideOneBuiltin: ints equal modulo 2**32 share a hash in
// go.starlark.net, so set() of many of them is one builtin call that runs
// for minutes (quadratic), where no step is taken and the thread cannot
// be cancelled. Run still ends at the wall time (plus a short grace) with
// the limit named.
func TestWallTimeInsideOneBuiltin(t *testing.T) {
	// range is lazy: the program reaches set() at once, with 300,000
	// colliding ints to insert.
	code := "s = set(range(0, 300000 << 32, 1 << 32))\nlen(s)"
	_, err := codemode.Run(context.Background(), code, codemode.NewRegistry(),
		codemode.Limits{WallTime: 300 * time.Millisecond})
	var ce *codemode.Error
	if !errors.As(err, &ce) || ce.Kind != codemode.KindLimit || !strings.Contains(ce.Msg, "wall time limit") {
		t.Fatalf("want a wall time limit, got %v", err)
	}
}

// TestChunkedInsertsKeepSemantics: set(), dict() and update, which insert
// a chunk at a time, give what one call gives: keyword arguments last,
// duplicates collapsed, errors named.
func TestChunkedInsertsKeepSemantics(t *testing.T) {
	t.Parallel()
	code := `pairs = [(i % 700, i) for i in range(2000)]
d = dict(pairs + [("a", 0)], a=1)
d2 = {"x": 0}
d2.update(pairs + [("x", 9)], x=5)
s = set([i % 300 for i in range(1000)])
s.update([1000, 1001])
[len(d), d[0], d["a"], len(d2), d2["x"], d2[699], len(s)]`
	res, err := codemode.Run(context.Background(), code, codemode.NewRegistry(), codemode.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(701), int64(1400), int64(1), int64(701), int64(5), int64(1399), int64(302)}
	if fmt.Sprint(res.Value) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", res.Value, want)
	}
	if _, err := codemode.Run(context.Background(), "dict([(1, 2), (3,)])", codemode.NewRegistry(), codemode.Limits{}); err == nil || !strings.Contains(err.Error(), "dict") {
		t.Errorf("a bad pair: %v", err)
	}
}

// TestIntOfLongStringRefused: parsing is quadratic in math/big, so a
// string of digits past the bound is refused with the bound named.
func TestIntOfLongStringRefused(t *testing.T) {
	t.Parallel()
	_, err := codemode.Run(context.Background(), `x = int("7" * 100000)`, codemode.NewRegistry(), codemode.Limits{})
	var ce *codemode.Error
	if !errors.As(err, &ce) || ce.Kind != codemode.KindLimit || !strings.Contains(ce.Msg, "over the limit of 4300 digits") {
		t.Errorf("got %v, want a limit naming 4300 digits", err)
	}
	if _, err := codemode.Run(context.Background(), `x = int("7" * 4300)`, codemode.NewRegistry(), codemode.Limits{}); err != nil {
		t.Errorf("4300 digits: %v", err)
	}
}

// TestWallTimeHoldsWhenACallDoesNotStop: a call that ignores the run's end
// (here a tool that does not watch its context; in a program, a builtin
// with no cancellation inside) cannot hold Run past the wall time: Run
// returns the limit shortly after it, and the call finishes alone.
func TestWallTimeHoldsWhenACallDoesNotStop(t *testing.T) {
	t.Parallel()
	release, returned := make(chan struct{}), make(chan struct{})
	tools := codemode.NewRegistry()
	tools.MustRegister(codemode.Tool{
		Name: "stubborn", Doc: "Waits until the test lets it go, whatever its context says.",
		Func: func(context.Context, map[string]any) (any, error) {
			defer close(returned)
			<-release
			return 1, nil
		},
	})
	_, err := codemode.Run(context.Background(), "stubborn()", tools, codemode.Limits{WallTime: 100 * time.Millisecond})
	close(release)
	<-returned
	var ce *codemode.Error
	if !errors.As(err, &ce) || ce.Kind != codemode.KindLimit || !strings.Contains(ce.Msg, "wall time limit") || !strings.Contains(ce.Msg, "does not stop") {
		t.Fatalf("want the wall time limit with the call left behind, got %v", err)
	}
}
