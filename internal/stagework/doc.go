// Package stagework is how a worker does stages: a Mux of typed stage
// handlers (Register), and the Executor every worker shares, which turns a
// stage command message into a stage result. The executor runs only
// commands the coordinator sent (admit.go: the job-state bucket has the
// command's stage pending), with the content-addressed cache in front of
// the work (an identical LLM call, image build or test run is answered
// from the cache, across jobs and crashes), and the failure policy of
// stages in one file (policy.go): which errors fail a stage at once, which
// are retried by redelivery and after what delay, and the
// infrastructure-error result of the last delivery, so a stage always ends
// in a result the coordinator can act on.
//
// The chain from the bus to a stage's code has three layers: the bus
// worker, the executor (admission, cache, in-flight claim, failure policy,
// one panic recovery) and the typed handler; layers_test.go fails if one
// is added. Stage handler packages are checked by one conformance suite,
// handlertest.Run.
//
//	mux := stagework.NewMux(messages.DefaultStages(), messages.PoolLLM)
//	stagework.Register(mux, messages.StagePlan, func(ctx context.Context, cmd *messages.StageCommand, in messages.PlanInput) (stagework.Output[messages.Plan], error) {
//		return stagework.Output[messages.Plan]{Value: messages.Plan{Description: "..."}}, nil
//	})
//	x, _ := stagework.NewExecutor(stagework.Config{Mux: mux, Publisher: pub, Cache: c,
//		Jobs: stagework.KVJobs{KV: res.JobState}})
//	w := bus.NewWorker(consumer, x, bus.WorkerConfig{Concurrency: 4})
//	err := w.Run(ctx)
package stagework
