package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Dead letters. A message that exhausts its deliveries (every worker that
// took it crashed, hung past AckWait, or could not answer) is given up by
// JetStream, which says so in a max-deliveries advisory naming the stream
// sequence; the message itself stays in its work-queue stream. The
// coordinator copies it into the dead-letter stream (bus.StreamDLQ) with
// the reason, removes it from its stream, and fails its stage at once with
// that reason, so the job ends instead of waiting for its stage deadline.
//
// Replay (`submit dlq replay`) re-opens the job: the letter holds the
// job's state from just before the failure, and when the job has not moved
// since (it finished because of the letter), the replay restores that
// state, with the stage pending again, drops the failed result, and
// publishes the original message again. The stage's result then finishes
// the job as if the letter had never died. A job that went on without the
// stage (a candidate's stage, an advisory stage) is not re-opened: the
// replay is refused, since its result would be ignored.
//
// Advisories are core NATS messages: one sent while no coordinator runs
// is lost, and its message stays in its work queue undelivered. Its stage
// then fails at its deadline (deadlines.go), as before dead letters.

// deadLetterWorker names the coordinator on the results it makes up for
// dead-lettered stages.
const deadLetterWorker = "coordinator (dead letter)"

// maxDeliveriesAdvisory is the part of JetStream's max-deliveries advisory
// (io.nats.jetstream.advisory.v1.max_deliver) the coordinator reads.
type maxDeliveriesAdvisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// handleAdvisory dead-letters the message one advisory names, if it is in
// one of autocoder's work queues.
func (c *Coordinator) handleAdvisory(ctx context.Context, data []byte) {
	var adv maxDeliveriesAdvisory
	if err := json.Unmarshal(data, &adv); err != nil || adv.StreamSeq == 0 {
		c.log.Warn("undecodable max-deliveries advisory", "err", err)
		return
	}
	stream, ok := c.workQueue(adv.Stream)
	if !ok {
		return // not ours (a KV watch, another application's stream)
	}
	if err := c.DeadLetter(ctx, stream, adv); err != nil {
		c.log.Error("dead-letter message", "stream", adv.Stream, "seq", adv.StreamSeq, "err", err)
	}
}

// workQueue is the handle of autocoder's work-queue stream named name.
func (c *Coordinator) workQueue(name string) (jetstream.Stream, bool) {
	r := c.cfg.Resources
	if name == bus.StreamJobs {
		return r.Jobs, r.Jobs != nil
	}
	for _, pool := range messages.Pools() {
		if name == bus.StageStream(pool) {
			return r.Stages[pool], r.Stages[pool] != nil
		}
		if name == bus.ResultStream(pool) {
			return r.Results[pool], r.Results[pool] != nil
		}
	}
	return nil, false
}

// DeadLetter copies the message of adv into the dead-letter stream,
// removes it from stream, and fails what it was about.
func (c *Coordinator) DeadLetter(ctx context.Context, stream jetstream.Stream, adv maxDeliveriesAdvisory) error {
	letter := messages.DeadLetter{V: messages.WireVersion, Stream: adv.Stream, Consumer: adv.Consumer,
		StreamSeq: adv.StreamSeq, Deliveries: adv.Deliveries, DeadAt: c.cfg.Now()}
	raw, err := stream.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		letter.Reason = fmt.Sprintf("message %d of %s exhausted its %d deliveries and was gone before it could be copied", adv.StreamSeq, adv.Stream, adv.Deliveries)
		return c.cfg.Publisher.PublishJSON(ctx, bus.SubjectDLQ, letter, bus.DeadLetterMsgID(adv.Stream, adv.StreamSeq))
	}
	if err != nil {
		return fmt.Errorf("read message %d of %s: %w", adv.StreamSeq, adv.Stream, err)
	}
	letter.Subject, letter.Data, letter.Headers = raw.Subject, raw.Data, raw.Header
	describe(&letter)
	var rec *record
	if letter.JobID != "" && letter.Seq > 0 {
		if rec, err = c.loadRecord(ctx, letter.JobID); err != nil {
			return err
		}
		if rec != nil {
			if letter.JobState, err = json.Marshal(rec.State); err != nil {
				return fmt.Errorf("marshal job %s: %w", letter.JobID, err)
			}
		}
	}
	if err := c.cfg.Publisher.PublishJSON(ctx, bus.SubjectDLQ, letter, bus.DeadLetterMsgID(adv.Stream, adv.StreamSeq)); err != nil {
		return fmt.Errorf("publish dead letter: %w", err)
	}
	c.log.Warn("message dead-lettered", "job_id", letter.JobID, "stage", letter.Stage, "seq", letter.Seq,
		"stream", adv.Stream, "stream_seq", adv.StreamSeq, "reason", letter.Reason)
	if err := stream.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		c.log.Warn("remove dead-lettered message", "stream", adv.Stream, "seq", adv.StreamSeq, "err", err)
	}
	return c.failDeadLettered(ctx, &letter)
}

// describe fills in what the letter's message was about and why it died.
func describe(l *messages.DeadLetter) {
	hdr := nats.Header(l.Headers)
	l.JobID, l.Stage = hdr.Get(bus.HeaderJobID), messages.Stage(hdr.Get(bus.HeaderStage))
	var about struct {
		JobID string         `json:"job_id"`
		Seq   int            `json:"seq"`
		Stage messages.Stage `json:"stage"`
	}
	if json.Unmarshal(l.Data, &about) == nil {
		l.JobID, l.Seq = about.JobID, about.Seq
		if about.Stage != "" {
			l.Stage = about.Stage
		}
	}
	if !bus.ValidJobID(l.JobID) {
		l.JobID = ""
	}
	what := "message"
	switch {
	case l.Stream == bus.StreamJobs:
		what, l.Seq = "the submission", 0
	case strings.HasPrefix(l.Stream, "AUTOCODER_RESULTS_"):
		what = fmt.Sprintf("the result of stage %s (seq %d)", l.Stage, l.Seq)
	case l.Stage != "":
		what = fmt.Sprintf("stage %s (seq %d)", l.Stage, l.Seq)
	}
	l.Reason = fmt.Sprintf("%s was dead-lettered: %d deliveries to %s without an answer (max deliveries reached)", what, l.Deliveries, l.Consumer)
}

// loadRecord is the job's stored record; nil when there is none.
func (c *Coordinator) loadRecord(ctx context.Context, jobID string) (*record, error) {
	e, err := c.cfg.States.Get(ctx, bus.JobKey(jobID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load job %s: %w", jobID, err)
	}
	var rec record
	if err := decodeRecord(e.Value(), &rec); err != nil {
		return nil, fmt.Errorf("job %s: corrupt state: %w", jobID, err)
	}
	return &rec, nil
}

// failDeadLettered ends what a dead letter was about: a stage (its command
// or its result) fails with the letter's reason; a submission finishes its
// job with it.
func (c *Coordinator) failDeadLettered(ctx context.Context, l *messages.DeadLetter) error {
	switch {
	case l.JobID == "":
		return nil
	case l.Stream == bus.StreamJobs:
		return c.reject(ctx, l.JobID, errors.New(l.Reason))
	case l.Seq == 0 || l.Stage == "":
		return nil
	}
	now := c.cfg.Now()
	res := &messages.StageResult{V: messages.WireVersion, JobID: l.JobID, Seq: l.Seq, Stage: l.Stage,
		Error: l.Reason, ErrorKind: messages.ErrorInfra, StartedAt: now, Worker: deadLetterWorker}
	return c.apply(ctx, l.JobID, machine.Input{Kind: machine.InputStageResult, Time: now, Result: res})
}

// apiReplay is the replay subject: a messages.ReplayRequest.
func (c *Coordinator) apiReplay(ctx context.Context, data []byte) messages.ReplayReply {
	var req messages.ReplayRequest
	if err := json.Unmarshal(data, &req); err != nil || req.Seq == 0 {
		return messages.ReplayReply{V: messages.WireVersion, Error: "want {\"seq\": <dead letter sequence>}"}
	}
	reply, err := c.Replay(ctx, req.Seq)
	if err != nil {
		reply.Error = err.Error()
	}
	reply.V = messages.WireVersion
	return reply
}

// ErrNoDeadLetter is returned (wrapped) by Replay for a sequence that is
// not in the dead-letter stream.
var ErrNoDeadLetter = errors.New("coordinator: no such dead letter")

// Replay publishes dead letter seq again on its original subject,
// re-opening its job first when the letter finished it (see the top of
// this file).
func (c *Coordinator) Replay(ctx context.Context, seq uint64) (messages.ReplayReply, error) {
	if c.cfg.Resources == nil || c.cfg.JS == nil {
		return messages.ReplayReply{}, ErrNoAPI
	}
	raw, err := c.cfg.Resources.DLQ.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return messages.ReplayReply{}, fmt.Errorf("%w: %d", ErrNoDeadLetter, seq)
	}
	if err != nil {
		return messages.ReplayReply{}, fmt.Errorf("read dead letter %d: %w", seq, err)
	}
	var l messages.DeadLetter
	if err := json.Unmarshal(raw.Data, &l); err != nil {
		return messages.ReplayReply{}, fmt.Errorf("dead letter %d: corrupt: %w", seq, err)
	}
	reply := messages.ReplayReply{JobID: l.JobID, Subject: l.Subject}
	if l.Subject == "" || len(l.Data) == 0 {
		return reply, fmt.Errorf("dead letter %d has no message to replay (it was gone before it could be copied)", seq)
	}
	if reply.Reopened, err = c.reopen(ctx, &l); err != nil {
		return reply, err
	}
	msg := &nats.Msg{Subject: l.Subject, Data: l.Data, Header: nats.Header{}}
	for k, v := range l.Headers {
		if !strings.HasPrefix(k, "Nats-") {
			msg.Header[k] = v
		}
	}
	if _, err := c.cfg.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(bus.ReplayMsgID(seq))); err != nil {
		return reply, fmt.Errorf("publish dead letter %d on %s: %w", seq, l.Subject, err)
	}
	c.log.Info("dead letter replayed", "seq", seq, "job_id", l.JobID, "subject", l.Subject, "reopened", reply.Reopened)
	return reply, nil
}

// reopen restores the job of letter l to its state before the letter
// failed it, when that is where it still stands; it reports whether it did.
func (c *Coordinator) reopen(ctx context.Context, l *messages.DeadLetter) (bool, error) {
	if l.JobID == "" {
		return false, nil
	}
	if l.Stream == bus.StreamJobs {
		return c.reopenSubmission(ctx, l.JobID)
	}
	if len(l.JobState) == 0 {
		return false, nil
	}
	var before machine.State
	if err := json.Unmarshal(l.JobState, &before); err != nil {
		return false, fmt.Errorf("dead letter of job %s: corrupt job state: %w", l.JobID, err)
	}
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		e, err := c.cfg.States.Get(ctx, bus.JobKey(l.JobID))
		if err != nil {
			return false, fmt.Errorf("load job %s: %w", l.JobID, err)
		}
		var now record
		if err := decodeRecord(e.Value(), &now); err != nil {
			return false, fmt.Errorf("job %s: corrupt state: %w", l.JobID, err)
		}
		if _, pending := now.State.Pending[l.Seq]; pending && !now.State.Done() {
			return false, nil // not failed yet: the replayed message is answered as it is
		}
		if !now.State.Done() || now.State.NextSeq != before.NextSeq {
			return false, fmt.Errorf("job %s went on without stage %s (seq %d): its result would be ignored, so it is not replayed", l.JobID, l.Stage, l.Seq)
		}
		restored := before
		if p, ok := restored.Pending[l.Seq]; ok {
			p.DispatchedAt = c.cfg.Now() // its deadline counts from the replay
			restored.Pending[l.Seq] = p
		}
		b, err := json.Marshal(record{State: restored})
		if err != nil {
			return false, fmt.Errorf("marshal job %s: %w", l.JobID, err)
		}
		if _, err := c.cfg.States.Update(ctx, bus.JobKey(l.JobID), storedRecord(b), e.Revision()); errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return false, fmt.Errorf("re-open job %s: %w", l.JobID, err)
		}
		c.states.drop(l.JobID)
		return true, c.forgetResult(ctx, l.JobID)
	}
	return false, fmt.Errorf("job %s: gave up after %d compare-and-set conflicts", l.JobID, maxCASAttempts)
}

// reopenSubmission drops the failed result of a job whose submission was
// dead-lettered, so that the replayed submission starts it.
func (c *Coordinator) reopenSubmission(ctx context.Context, jobID string) (bool, error) {
	if _, err := c.cfg.States.Get(ctx, bus.JobKey(jobID)); err == nil {
		return false, fmt.Errorf("job %s has started since: its submission is not replayed", jobID)
	}
	return true, c.forgetResult(ctx, jobID)
}

func (c *Coordinator) forgetResult(ctx context.Context, jobID string) error {
	if err := c.cfg.Results.Delete(ctx, bus.JobKey(jobID)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("drop the failed result of job %s: %w", jobID, err)
	}
	return nil
}
