// Package bench holds autocoder's end-to-end benchmarks: whole jobs through
// the real stack on a fake model whose latency is held fixed. They are go
// test benchmarks, so the normal test pass does not run them; each reports
// its figures next to a baseline measured in the same run (see
// BENCHMARKS.md).
//
//   - BenchmarkStageHop: the orchestration cost of a stage hop, against a
//     JetStream round trip (in-process stack, instant sandbox).
//
//   - BenchmarkFirstPassWall: a first-pass job's wall time in model
//     latencies, for each options.first_pass.
//
//   - BenchmarkThroughput: HumanEval jobs through separate coordinator,
//     llm-worker and sandbox-worker processes with NATS authentication
//     on, against bare pytest on the same files (throughput_test.go; its
//     flags -throughput.* choose the problems, workers, jobs in flight,
//     warm runner setting and first pass, and write PNG plots).
//
//   - BenchmarkCancel: a cancel, end to end, against the backend's own kill.
//
//     go test -run '^$' -bench . -benchtime 1x ./bench   # the smoke run of the test command
//     go test -run '^$' -bench Throughput -benchtime 1x -timeout 90m ./bench \
//     -args -throughput.jobs=164 -throughput.workers=1,2 -throughput.concurrency=16,164 -throughput.plot=$PWD/docs/img
package bench
