// Package metrics is autocoder's Prometheus side, and the only package
// that imports Prometheus: the names of every metric family the binaries
// register (names.go: one file, so dashboards, the table of docs/operations.md and tests
// have one list to check against), the histogram buckets, and a Builder
// that attaches the metrics to the parts of a process, as Watermill's
// metrics builder decorates its publishers and handlers. Each part knows
// only its own small observer interface: bus.Metrics, stagework.Metrics,
// coordinator.Metrics, llm.Observer; the sandbox backend and the stage
// cache are decorated.
//
// Labels never hold job IDs: only stage, pool, model, backend, layer and
// outcome-like values, each from a small set.
//
//	m := metrics.NewBuilder()                 // a registry with the Go and process collectors
//	busObs, err := m.Bus()                     // bus.WorkerConfig.Metrics
//	stageObs, err := m.Stages(messages.DefaultStages()) // stagework.Config.Metrics
//	backend, err = m.Backend(backend)
//	http.Handle("/metrics", m.Handler())
package metrics
