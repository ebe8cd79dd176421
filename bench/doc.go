// Package bench holds autocoder's end-to-end benchmarks: whole jobs through
// the real stack (embedded NATS, coordinator, llm-worker, sandbox-worker) on
// a fake model whose latency is held fixed. They are go test benchmarks, so
// the normal test pass does not run them; each reports its figures next to
// a baseline measured in the same run (see BENCHMARKS.md).
//
//	go test -run '^$' -bench . -benchtime 20x ./bench
package bench
