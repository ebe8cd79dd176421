package codemode_test

import (
	"context"
	"testing"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/autocoder/autocoder/internal/codemode"
)

// chargeBenchProgram is the kind of work a code-mode program does between
// tool calls: split text, build rows and dicts, sort, join. It has no
// while loop or recursion, so it runs unchanged under plain Starlark.
const chargeBenchProgram = `
text = "\n".join(["sku%d,%d,%d" % (i, i % 17, i * 3) for i in range(2000)])
rows = [line.split(",") for line in text.splitlines()]
items = [{"sku": r[0], "stock": int(r[1]), "price": int(r[2])} for r in rows]
low = sorted([it for it in items if it["stock"] < 3], key=lambda it: it["price"])
by = {}
for it in items:
    by[it["stock"]] = by.get(it["stock"], 0) + it["price"]
summary = ", ".join([it["sku"].upper() for it in low[:50]])
result = [len(low), len(by), len(summary)]
`

// BenchmarkChargedVsPlain times chargeBenchProgram through codemode.Run
// (every step, call and operator charged to the memory budget) against the
// same program on plain go.starlark.net, interleaved in each op so that
// the machine's load falls on both alike; the ratio is the cost of the
// charging (with the static check and rewriting, which Run also does).
func BenchmarkChargedVsPlain(b *testing.B) {
	opts := &syntax.FileOptions{Set: true, TopLevelControl: true, GlobalReassign: true}
	tools := codemode.NewRegistry()
	var plain, charged time.Duration
	for b.Loop() {
		t0 := time.Now()
		thread := &starlark.Thread{Name: "plain"}
		if _, err := starlark.ExecFileOptions(opts, thread, "bench.star", chargeBenchProgram, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := codemode.Run(context.Background(), chargeBenchProgram, tools, codemode.Limits{}); err != nil {
			b.Fatal(err)
		}
		plain, charged = plain+t1.Sub(t0), charged+time.Since(t1)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/op")
	b.ReportMetric(float64(charged.Nanoseconds())/float64(b.N), "charged-ns/op")
	b.ReportMetric(float64(charged)/float64(plain), "charged/plain")
}
