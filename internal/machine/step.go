package machine

import (
	"encoding/json"
	"fmt"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Step applies one input to a job's state and returns the next state and the
// commands to carry out. It is a pure function: no I/O, no clock, no
// randomness, and prev is never modified, so it can be tested exhaustively and
// replayed from a recorded event log.
//
// Inputs that do not fit the state (a result for a stage that is not pending,
// anything after the job is done) change nothing and return no commands: a
// redelivered message is harmless.
func (mc *Machine) Step(prev State, in Input) (State, []Command) {
	s := prev.Clone()
	m := &Stepper{s: &s, now: in, kind: mc.kindOf(submissionOf(&s))}
	if m.kind == nil {
		m.kind = &unknownKind // a job no kind takes: its inputs end it (stageResult)
	}
	changed := false
	switch in.Kind {
	case InputSubmitted:
		changed = s.JobID == "" && in.Submit != nil // else a duplicate submission
		if changed {
			m.submit(mc, in.Submit)
		}
	case InputStageResult:
		changed = m.stageResult(in.Result)
	case InputCancel:
		changed = !s.Done() && s.JobID != ""
		if changed {
			m.cancel(in)
		}
	case InputStageStarted:
		changed = m.stageStarted(in.Started) // started.go
	case InputAbort:
		changed = !s.Done() && s.JobID != ""
		if changed {
			m.abort(in) // abort.go
		}
	}
	if !changed {
		return prev, nil
	}
	return s, m.cmds
}

// Stepper is one step of one job: the state it changes, the input's time
// and the commands so far. A kind's Start and result rows act on their job
// through it: Enter a phase, Dispatch a stage, Note why, Finish the job.
type Stepper struct {
	s    *State
	now  Input
	cmds []Command
	kind *Kind
}

// unknownKind stands in for the kind of a job no kind of the Machine takes.
var unknownKind = Kind{Name: "unknown"}

func (m *Stepper) submit(mc *Machine, sub *Submission) {
	s := m.s
	s.JobID = sub.JobID
	s.Spec = sub.Spec
	s.Samples = sub.Samples
	s.SubmittedAt = m.now.Time
	s.Status = messages.StatusRunning
	s.Pending = map[int]Pending{}
	s.Task = messages.TaskSpec{
		Prompt:      sub.Spec.Prompt,
		Schema:      sub.Spec.Schema,
		Constraints: sub.Spec.Constraints,
		Inputs:      sub.Spec.Inputs,
		Outputs:     sub.Spec.Outputs,
		Context:     sub.Spec.Context,
	}
	if len(sub.Samples) > 0 {
		s.Task.Samples = map[string]string{}
		for _, r := range sub.Samples {
			s.Task.Samples[r.Name] = r.FileName
		}
	}
	s.Packages = normPackages(sub.Spec.Options.BasePackages)
	m.emit(messages.Event{Type: messages.EventJobStarted, Message: "job accepted"})
	m.kind = mc.kindOf(sub)
	if m.kind == nil {
		m.kind = &unknownKind
		m.Finish(messages.StatusErrored, "internal: no kind of job takes this submission")
		return
	}
	m.kind.Start(m, sub)
}

// stageResult takes the result of a pending stage and reports whether it
// was one: a stale or duplicate result, or one after the job is done,
// changes nothing. The result goes through the row of the job's kind.
func (m *Stepper) stageResult(r *messages.StageResult) bool {
	s := m.s
	if r == nil || s.Done() {
		return false
	}
	p, ok := s.Pending[r.Seq]
	if !ok || p.Stage != r.Stage {
		return false
	}
	delete(s.Pending, r.Seq)
	m.record(p, r) // budget.go
	row, ok := m.kind.results[r.Stage]
	switch {
	case p.Orphan:
		m.orphanResult(p, r) // candidates.go
	case !ok:
		m.Finish(messages.StatusErrored, fmt.Sprintf("internal: the %s kind dispatched stage %s and has no row for its result", m.kind.Name, r.Stage))
	case m.retrySandbox(p, r): // settings.go
	case r.Error != "" && row.failed != nil:
		row.failed(m, p, r)
	case r.Error != "":
		m.stageFailed(p, r)
	default:
		row.result(m, p, r)
	}
	return true
}

// stageFailed ends the job on a failed stage, except for a candidate's
// stage: that candidate is out, and the others go on. (Advisory stages
// have their own failure handling in their rows.)
func (m *Stepper) stageFailed(p Pending, r *messages.StageResult) {
	if p.Candidate > 0 {
		m.candidateFailed(p, r) // candidates.go
		return
	}
	if m.fallBack(fmt.Sprintf("were still being repaired when the %s stage failed (%s)", r.Stage, firstLine(r.Error))) { // strength.go
		return
	}
	status := messages.StatusErrored
	if r.ErrorKind == messages.ErrorPermanent {
		status = messages.StatusFailed
	}
	m.Finish(status, fmt.Sprintf("stage %s failed: %s", r.Stage, r.Error))
}

// generate and advance are the job's kind's (loop): the steps the
// pipeline shares with other kinds call them.
func (m *Stepper) generate() { m.loopStep("generate", m.kind.loop.generate) }
func (m *Stepper) advance()  { m.loopStep("advance", m.kind.loop.advance) }

func (m *Stepper) loopStep(name string, step func(*Stepper)) {
	if step == nil {
		m.Finish(messages.StatusErrored, fmt.Sprintf("internal: the %s kind has no %s step", m.kind.Name, name))
		return
	}
	step(m)
}

// Dispatch sends a command for stage, with input as its JSON, to the
// stage's worker pool; the result comes back through the kind's row for
// stage. A finished job sends nothing, and a model stage over
// options.token_budget finishes the job instead.
func (m *Stepper) Dispatch(stage messages.Stage, input any) {
	m.dispatchWith(stage, input, Pending{})
}

// dispatchWith sends a stage command; p carries the candidate and the
// environment key. Once the job is done it sends nothing, and a model call
// over options.token_budget ends the job instead (the budget is checked
// before every model call, so sandbox stages already paid for can finish).
func (m *Stepper) dispatchWith(stage messages.Stage, input any, p Pending) {
	s := m.s
	if s.Done() {
		return
	}
	pool := messages.DefaultStages().Pool(stage)
	if pool == messages.PoolLLM && overBudget(s) && m.fallBack(fmt.Sprintf("were still being repaired when the token budget (%d) ran out", s.Spec.Options.TokenBudget)) { // strength.go
		return
	}
	if pool == messages.PoolLLM && overBudget(s) {
		m.Finish(messages.StatusFailed, fmt.Sprintf("token budget exceeded: %d tokens used, options.token_budget is %d (stopped before the %s stage)",
			tokensUsed(s), s.Spec.Options.TokenBudget, stage))
		return
	}
	b, err := json.Marshal(input)
	if err != nil {
		m.Finish(messages.StatusErrored, "internal: marshal "+string(stage)+" input: "+err.Error())
		return
	}
	s.NextSeq++
	seq := s.NextSeq
	p.Stage, p.Iteration, p.DispatchedAt = stage, s.Iteration, m.now.Time
	if s.Spec.Options.SandboxRetries > 0 && pool == messages.PoolSandbox {
		p.Input = b // to send again after an infrastructure failure (settings.go)
	}
	s.Pending[seq] = p
	m.cmds = append(m.cmds, Command{Dispatch: &messages.StageCommand{
		V: messages.WireVersion, JobID: s.JobID, Seq: seq, Stage: stage, Iteration: s.Iteration,
		Model: s.Spec.Options.Model, Cache: s.Spec.Options.Cache, Input: b,
		Settings: messages.SettingsFor(pool, &s.Spec.Options),
	}})
	m.emit(messages.Event{Type: messages.EventStageQueued, Stage: stage, Seq: seq, Iteration: s.Iteration})
}

// busy reports whether a stage of the given kinds is pending for line c
// (0: the job's own line; else a candidate). Orphans do not count.
func (m *Stepper) busy(c int, stages ...messages.Stage) bool {
	for _, p := range m.s.Pending {
		if p.Candidate != c || p.Orphan {
			continue
		}
		for _, st := range stages {
			if p.Stage == st {
				return true
			}
		}
	}
	return false
}

func (m *Stepper) emit(e messages.Event) {
	e.V = messages.WireVersion
	e.JobID = m.s.JobID
	e.Time = m.now.Time
	m.cmds = append(m.cmds, Command{Emit: &e})
}

// Finish ends the job with status and, unless it succeeded, the reason.
// The stages still in flight become stale. A finished job stays as it is.
func (m *Stepper) Finish(status messages.JobStatus, reason string) {
	s := m.s
	if s.Done() {
		return
	}
	s.Phase = PhaseDone // from any phase: no kind's Phases lists it
	s.Status = status
	s.Error = reason
	t := m.now.Time
	s.FinishedAt = &t
	s.Pending = map[int]Pending{} // results still in flight are now stale
	s.Candidates = nil
	s.Round = nil
	res := ResultOf(*s)
	success := status == messages.StatusSucceeded
	msg := reason
	if success {
		msg = m.kind.succeeded
		if msg == "" {
			msg = "succeeded"
		}
	}
	m.emit(messages.Event{Type: messages.EventJobFinished, Success: &success, Message: msg})
	m.cmds = append(m.cmds, Command{Finish: &res})
}
