// Package stagework is the part every worker shares: a Runner that turns a
// stage command message into a stage result, with the content-addressed
// cache in front of the work (an identical LLM call, image build or test run
// is answered from the cache, across jobs and crashes), retries by
// redelivery, and a clear error result when a stage cannot be done.
//
//	r, _ := stagework.NewRunner(stagework.Config{Handler: h, Publisher: pub, Cache: c})
//	w := bus.NewWorker(consumer, r, bus.WorkerConfig{Concurrency: 4})
//	err := w.Run(ctx)
package stagework
