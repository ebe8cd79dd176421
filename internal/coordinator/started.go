package coordinator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// handleStarted applies a worker's stage_started notice (on core NATS,
// bus.StartedSubject) to its job: machine.InputStageStarted marks the
// pending stage started. A notice that is not one, or that comes from a
// pool other than its stage's, is dropped and counted like a refused
// result; the machine drops one for a stage that is not pending.
func (c *Coordinator) handleStarted(ctx context.Context, m *nats.Msg) {
	n, err := startedNotice(c.cfg.Stages, m.Subject, m.Data)
	if err != nil {
		c.log.Warn("stage_started notice refused", "subject", m.Subject, "err", err)
		c.cfg.Metrics.ResultRefused()
		return
	}
	if err := c.apply(ctx, n.JobID, machine.Input{Kind: machine.InputStageStarted, Time: c.cfg.Now(), Started: n}); err != nil {
		// Best effort: the stage's result carries its start as well.
		c.log.Debug("apply a stage_started notice", "job_id", n.JobID, "stage", n.Stage, "seq", n.Seq, "err", err)
	}
}

// startedNotice decodes a notice and checks it against its subject and
// the stage table.
func startedNotice(stages messages.StageTable, subject string, data []byte) (*messages.StageStarted, error) {
	pool, jobID, ok := bus.ParseStartedSubject(subject)
	if !ok {
		return nil, fmt.Errorf("%q is not a started subject", subject)
	}
	var n messages.StageStarted
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	switch {
	case n.JobID != jobID:
		return nil, fmt.Errorf("a notice of job %s on the subject of job %s", n.JobID, jobID)
	case stages.Pool(n.Stage) != pool:
		return nil, fmt.Errorf("a %s notice from the %s pool", n.Stage, pool)
	}
	return &n, nil
}
