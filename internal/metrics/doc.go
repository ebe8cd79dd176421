// Package metrics holds the names of every Prometheus metric family the
// autocoder binaries register (names.go: one file, so dashboards, the table
// of docs/operations.md and tests have one list to check against), the histogram buckets,
// and the Prometheus adapters of the parts that take an observer: the model
// client (Model), the stage cache (ObserveCache) and the sandbox backends
// (ObserveBackend).
//
// Labels never hold job IDs: only stage, pool, model, backend, layer and
// outcome-like values, each from a small set.
//
//	m, err := metrics.NewModel(reg)          // llm.OpenAIConfig.Observer = m
//	c, err := metrics.ObserveCache(c, "redis", reg)
//	b, err := metrics.ObserveBackend(b, reg)
package metrics
