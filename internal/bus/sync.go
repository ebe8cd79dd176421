package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// How JetStream's file store reaches the disk. nats-server acknowledges a
// write once it is in the operating system's page cache and flushes the
// files every two minutes (sync_interval); the Jepsen analysis of NATS
// 2.12 (2025) showed acknowledged writes lost when every node of a cluster
// lost power at once, since a replicated write is acknowledged once a
// quorum has it in memory. What autocoder keeps there is the only copy of
// the jobs: submissions, each job's state machine and result, the stage
// commands in flight. A lost write is a job that vanished after its
// submitter was told it was queued, or a state rolled back behind the
// stages it already dispatched. So the embedded server and the generated
// deploy/compose/nats.conf flush every write (SyncAlways); the price,
// measured by BenchmarkStateWriteSync (BENCHMARKS.md), is small beside a
// job's model calls. An operator who accepts the risk sets an interval.
//
// Progress events are the exception. They are notes of what a job's state
// already holds, and each step's events are kept in the job's outbox,
// with its state, until that step's commands and events are out and the
// next step or a second has passed (at once for a finished job:
// coordinator/outbox.go). So the events
// stream, on one node, is flushed asynchronously (JetStream's persist
// mode "async", provisioner.events): its writes no longer queue on the
// disk beside the state's and the commands' on every stage hop
// (BENCHMARKS.md). A crash of the server loses at most the events written
// in its last milliseconds, which a running job's outbox publishes again
// when the coordinator recovers; a power loss loses those of the last sync
// interval (two minutes). Either way the jobs' states and results stay
// whole: `submit events` shows a gap, and a client's Watch that never sees
// job_finished reads the result from the state (pkg/client's stall
// check). In a cluster the events stream is flushed as the others are:
// JetStream has asynchronous flushing for one replica only, and a stream
// keeps the mode it was made with, so one made with a single replica could
// not be raised to more.

// SyncAlways is the sync policy that flushes every write before it is
// acknowledged (sync_interval: always).
const SyncAlways = "always"

// CheckSync checks a sync policy: SyncAlways, "" (the same) or a
// positive Go duration.
func CheckSync(policy string) error {
	return syncOptions(&server.Options{}, policy)
}

// syncOptions sets the file store's sync policy of opts from policy:
// SyncAlways or "" (the default), or a positive Go duration.
func syncOptions(opts *server.Options, policy string) error {
	switch policy {
	case "", SyncAlways:
		opts.SyncAlways = true
		return nil
	}
	d, err := time.ParseDuration(policy)
	if err != nil || d <= 0 {
		return fmt.Errorf("AUTOCODER_NATS_SYNC: %q is not %q or a positive duration such as 2m", policy, SyncAlways)
	}
	opts.SyncInterval = d
	return nil
}
