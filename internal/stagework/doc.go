// Package stagework is the stage executor every worker shares: an Executor
// that turns a stage command message into a stage result. It runs only
// commands the coordinator sent (admit.go: the job-state bucket has the
// command's stage pending), with the content-addressed cache in front of
// the work (an identical LLM call, image build or test run is answered
// from the cache, across jobs and crashes), and the failure policy of stages in one file (policy.go): which
// errors fail a stage at once, which are retried by redelivery and after
// what delay, and the infrastructure-error result of the last delivery, so
// a stage always ends in a result the coordinator can act on.
//
// Stage handlers are checked by one conformance suite, handlertest.Run.
//
//	x, _ := stagework.NewExecutor(stagework.Config{Handler: h, Publisher: pub, Cache: c,
//		Pool: messages.PoolLLM, Jobs: stagework.KVJobs{KV: res.JobState}})
//	w := bus.NewWorker(consumer, x, bus.WorkerConfig{Concurrency: 4})
//	err := w.Run(ctx)
package stagework
