package machine

import (
	"sort"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// workerNameBudget bounds the worker name a notice puts on the state.
const workerNameBudget = 200

// A stage is queued from its dispatch (stage_queued) until a worker takes
// it and says so (messages.StageStarted, InputStageStarted): then it runs
// (stage_started) until its result. The notice only marks the pending
// stage; what the job does next is still decided by results alone, so a
// lost or late notice changes no outcome, only what the live views show.

// stageStarted marks a pending stage as started by the worker of n and
// reports whether it was one. A notice for a stage that is not pending (its
// result came first, the job is done) or that is marked already changes
// nothing.
func (m *Stepper) stageStarted(n *messages.StageStarted) bool {
	s := m.s
	if n == nil || s.Done() {
		return false
	}
	p, ok := s.Pending[n.Seq]
	if !ok || p.Stage != n.Stage || p.StartedAt != nil {
		return false
	}
	at := n.StartedAt
	if at.IsZero() {
		at = m.now.Time
	}
	p.StartedAt, p.Worker = &at, trim.Middle(n.Worker, workerNameBudget)
	s.Pending[n.Seq] = p
	m.emit(messages.Event{Type: messages.EventStageStarted, Stage: p.Stage, Seq: n.Seq, Iteration: p.Iteration, Worker: p.Worker})
	// The event is timed when the stage started, not when the notice came
	// (a worker announces a stage once it has run a moment).
	m.cmds[len(m.cmds)-1].Emit.Time = at
	return true
}

// recordInFlight ends the stages still pending when the job stops early
// (a cancellation): each gets its line in the stage list, with how long
// it had run (none if it was still queued) and outcome, and a
// stage_finished event, so the timeline and the live views show what was
// stopped.
func (m *Stepper) recordInFlight(outcome string) {
	s := m.s
	seqs := make([]int, 0, len(s.Pending))
	for seq := range s.Pending {
		seqs = append(seqs, seq)
	}
	sort.Ints(seqs)
	now := m.now.Time
	for _, seq := range seqs {
		p := s.Pending[seq]
		rec := messages.StageRecord{Name: p.Stage, Seq: seq, Iteration: p.Iteration, Outcome: outcome,
			Worker: p.Worker, DispatchedAt: p.DispatchedAt, FinishedAt: now}
		if p.StartedAt != nil {
			rec.StartedAt = *p.StartedAt
			rec.DurationMS = max(0, now.Sub(*p.StartedAt).Milliseconds())
		}
		m.appendStage(rec)
		m.emit(messages.Event{Type: messages.EventStageFinished, Stage: p.Stage, Seq: seq, Iteration: p.Iteration, Outcome: outcome})
	}
}
