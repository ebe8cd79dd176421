package bus

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/pkg/messages"
)

// AnnounceStarted publishes n, a worker's notice that it started a stage,
// on core NATS for the coordinators (StartedSubject of pool and the job):
// best effort, since the stage's result carries its start too. The job ID
// must satisfy ValidJobID (the executor admitted the command).
func AnnounceStarted(nc *nats.Conn, pool messages.Pool, n messages.StageStarted) error {
	if !ValidJobID(n.JobID) {
		return fmt.Errorf("bus: announce a stage of job %q: not a job id", n.JobID)
	}
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return nc.Publish(StartedSubject(pool, n.JobID), b)
}
