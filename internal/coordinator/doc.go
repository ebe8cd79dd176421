// Package coordinator applies job submissions and stage results to each
// job's state machine (internal/machine), stored in a JetStream KV bucket and
// updated by compare-and-set on the revision, and carries out the commands:
// stage commands to the worker pools, progress events, results. Any number of
// coordinators may share the work: a lost race re-steps on the fresh state,
// and an outbox in the stored record makes publishing crash-safe. A run of a
// finished job's script on new data (messages.SubmitJob.Run, a machine.Rerun) is filled in
// from that job's stored result (PrepareRun) and then stepped like a job.
//
//	c, _ := coordinator.New(coordinator.Config{States: res.JobState, Results: res.JobResults, Publisher: pub})
//	go bus.NewWorker(res.JobsConsumer, bus.HandlerFunc(c.HandleJobs), cfg).Run(ctx) // submissions and cancels
//	for _, pool := range messages.Pools() {
//		go bus.NewWorker(res.ResultConsumers[pool], bus.HandlerFunc(c.HandleResult), cfg).Run(ctx)
//	}
//	go c.WatchDeadlines(ctx)
package coordinator
