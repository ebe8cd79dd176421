package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testTimeout bounds every call that talks to the server: far above what
// anything should take, so it only fires when something is broken.
const testTimeout = 30 * time.Second

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// env is one embedded NATS server, provisioned in memory.
type env struct {
	js  jetstream.JetStream
	res *bus.Resources
	pub *bus.Publisher
	// clearDelay is the coordinators' OutboxClearDelay: at once unless a
	// test says otherwise, so a test that counts writes or reads the
	// outbox after a step sees it cleared (outbox_test.go has the delay).
	clearDelay time.Duration
	// indexDelay is the coordinators' IndexDelay (zero: the default).
	indexDelay time.Duration
}

func newEnv(t *testing.T) *env {
	t.Helper()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	return &env{js: be.JS, res: be.Resources, pub: be.Publisher, clearDelay: -1}
}

// coordinator returns a coordinator on e with a fixed clock; states and pub
// replace the bucket and the publisher when not nil.
func (e *env) coordinator(t *testing.T, states jetstream.KeyValue, pub coordinator.Publisher, reg *prometheus.Registry) *coordinator.Coordinator {
	t.Helper()
	if states == nil {
		states = e.res.JobState
	}
	if pub == nil {
		pub = e.pub
	}
	var m coordinator.Metrics
	if reg != nil {
		var err error
		if m, err = metrics.NewBuilderOn(reg).Coordinator(e.res); err != nil {
			t.Fatal(err)
		}
	}
	c, err := coordinator.New(coordinator.Config{States: states, Results: e.res.JobResults, Index: e.res.JobIndex, Publisher: pub,
		Now: func() time.Time { return t0 }, DefaultModel: "test-model", Metrics: m, OutboxClearDelay: e.clearDelay,
		IndexDelay: e.indexDelay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func submitMsg(t *testing.T, jobID string, spec messages.JobSpec) *bus.Message {
	t.Helper()
	b, err := json.Marshal(messages.SubmitJob{V: messages.WireVersion, JobID: jobID, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return bus.NewMessage(bus.SubjectJobsSubmit, b, nil, 1)
}

// resultMsg is r as its worker publishes it (bus.ResultSubject).
func resultMsg(t *testing.T, r *messages.StageResult) *bus.Message {
	t.Helper()
	return stageResultMsg(t, r, bus.ResultSubject)
}

// offerMsg is r as its worker offers it (bus.OfferSubject).
func offerMsg(t *testing.T, r *messages.StageResult) *bus.Message {
	t.Helper()
	return stageResultMsg(t, r, bus.OfferSubject)
}

// stageResultMsg is r on subject's subject for its stage's pool and job.
func stageResultMsg(t *testing.T, r *messages.StageResult, subject func(messages.Pool, string) string) *bus.Message {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return bus.NewMessage(subject(messages.DefaultStages().Pool(r.Stage), r.JobID), b, nil, 1)
}

// offer offers msg to c and returns its answer.
func offer(t *testing.T, c *coordinator.Coordinator, msg *bus.Message) bool {
	t.Helper()
	answered := make(chan bool, 1)
	c.HandleOffer(ctxT(t), msg, func(taken bool) { answered <- taken })
	select {
	case taken := <-answered:
		return taken
	case <-time.After(time.Minute):
		t.Fatal("the offer was never answered")
		return false
	}
}

// answerSpec asks for one int output and has no samples.
// answerSpec plans first: the coordinator's tests step through a plan, then
// code and tests together (the machine's tests have the one-round pass).
func answerSpec() messages.JobSpec {
	return messages.JobSpec{Prompt: "Compute 42 and write it as the output answer.",
		Outputs: map[string]messages.Type{"answer": messages.TypeInt},
		Options: messages.Options{FirstPass: messages.FirstPassPlanFirst}}
}

// answers are a successful output of each stage the tests' jobs reach.
var answers = map[messages.Stage]any{
	messages.StageProfile:    messages.ProfileOutput{DataContext: "3 rows", GeneratedSchemas: map[string]string{"s": "schema"}},
	messages.StagePlan:       messages.Plan{Description: "return 42", Approach: "a function"},
	messages.StageCode:       answerSolution,
	messages.StageFix:        answerSolution,
	messages.StageTests:      messages.Tests{Code: "from solution import f\n\n\ndef test_f():\n    assert f() == 42\n"},
	messages.StagePackages:   messages.Packages{Packages: []string{}},
	messages.StageBuild:      messages.BuildOutput{Image: "env-1"},
	messages.StageRunTests:   messages.TestReport{Passed: 1},
	messages.StageAcceptance: messages.AcceptanceOutput{OK: true, Outputs: map[string]any{"answer": 42}},
	messages.StageMutate:     messages.TestStrength{Points: 2, Mutants: 2, Killed: 2, Score: 1},
}

var answerSolution = messages.Solution{Language: "python", Code: "def f():\n    return 42\n", Packages: []string{}, SystemPackages: []string{}}

// answer is a successful result for cmd, whatever stage it is.
func answer(t *testing.T, cmd messages.StageCommand) *messages.StageResult {
	t.Helper()
	out, ok := answers[cmd.Stage]
	if !ok {
		t.Fatalf("no answer for stage %s", cmd.Stage)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return &messages.StageResult{V: messages.WireVersion, JobID: cmd.JobID, Seq: cmd.Seq, Stage: cmd.Stage,
		Output: b, StartedAt: t0, DurationMS: 1, Usage: messages.Usage{InputTokens: 3, OutputTokens: 2, Calls: 1}}
}

// stored is a message read back from a stream.
type stored struct {
	subject string
	msgID   string
	data    []byte
}

// streamMsgs returns every message a stream ever stored that is still there
// (nothing consumes in these tests, so that is every message) and the
// stream's last sequence, which counts every message ever stored.
func streamMsgs(t *testing.T, s jetstream.Stream) ([]stored, uint64) {
	t.Helper()
	ctx := ctxT(t)
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	var out []stored
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("get message %d: %v", seq, err)
		}
		out = append(out, stored{subject: m.Subject, msgID: m.Header.Get("Nats-Msg-Id"), data: m.Data})
	}
	return out, info.State.LastSeq
}

// commands returns every stage command on both pools' streams.
func (e *env) commands(t *testing.T) []messages.StageCommand {
	t.Helper()
	var out []messages.StageCommand
	for _, pool := range messages.Pools() {
		msgs, _ := streamMsgs(t, e.res.Stages[pool])
		for _, m := range msgs {
			var c messages.StageCommand
			if err := json.Unmarshal(m.data, &c); err != nil {
				t.Fatalf("stage command on %s: %v", m.subject, err)
			}
			if want := bus.StageSubject(messages.DefaultStages().Pool(c.Stage), c.Stage); m.subject != want {
				t.Errorf("%s command on subject %s, want %s", c.Stage, m.subject, want)
			}
			out = append(out, c)
		}
	}
	return out
}

// events returns the progress events of one job, in order.
func (e *env) events(t *testing.T, jobID string) []messages.Event {
	t.Helper()
	msgs, _ := streamMsgs(t, e.res.Events)
	var out []messages.Event
	for _, m := range msgs {
		if m.subject != bus.EventSubject(jobID) {
			continue
		}
		var ev messages.Event
		if err := json.Unmarshal(m.data, &ev); err != nil {
			t.Fatalf("event: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// counts is how much the server holds: a change in any of them means a
// handler did something.
type counts struct {
	StageMsgs  uint64 // last sequence of the stage streams, summed
	EventMsgs  uint64
	StateRev   uint64 // the job's state revision, 0 if none
	ResultRevs uint64 // the job's result revision, 0 if none
}

func (e *env) counts(t *testing.T, jobID string) counts {
	t.Helper()
	var c counts
	for _, pool := range messages.Pools() {
		_, last := streamMsgs(t, e.res.Stages[pool])
		c.StageMsgs += last
	}
	_, c.EventMsgs = streamMsgs(t, e.res.Events)
	if en, err := e.res.JobState.Get(ctxT(t), bus.JobKey(jobID)); err == nil {
		c.StateRev = en.Revision()
	}
	if en, err := e.res.JobResults.Get(ctxT(t), bus.JobKey(jobID)); err == nil {
		c.ResultRevs = en.Revision()
	}
	return c
}

// waitSettled waits until a finished job's last step is all out: its
// job_finished event is in the stream and its outbox is empty.
func (e *env) waitSettled(t *testing.T, jobID string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		evs := e.events(t, jobID)
		if len(evs) > 0 && evs[len(evs)-1].Type == messages.EventJobFinished && e.outboxLen(t, jobID) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s did not settle: no job_finished event, or an outbox left", jobID)
}

func (e *env) result(t *testing.T, jobID string) *messages.Result {
	t.Helper()
	en, err := e.res.JobResults.Get(ctxT(t), bus.JobKey(jobID))
	if err != nil {
		t.Fatalf("result of %s: %v", jobID, err)
	}
	var r messages.Result
	if err := json.Unmarshal(en.Value(), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// decodeStored reads a value of the state bucket (stored compressed:
// bus.EncodeStateRecord) into v.
func decodeStored(value []byte, v any) error {
	b, err := bus.DecodeStateRecord(value)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// outboxLen reads the number of commands a job's stored record still
// holds for publishing.
func (e *env) outboxLen(t *testing.T, jobID string) int {
	t.Helper()
	en, err := e.res.JobState.Get(ctxT(t), bus.JobKey(jobID))
	if err != nil {
		t.Fatalf("state of %s: %v", jobID, err)
	}
	var rec struct {
		Outbox []json.RawMessage `json:"outbox"`
	}
	if err := decodeStored(en.Value(), &rec); err != nil {
		t.Fatal(err)
	}
	return len(rec.Outbox)
}

// flakyPublisher fails the first n publishes whose subject starts with prefix,
// as a coordinator does that crashes (or loses NATS) after storing a state
// and before its commands are out.
type flakyPublisher struct {
	inner  coordinator.Publisher
	prefix string
	fails  atomic.Int32
}

var errInjected = errors.New("injected publish failure")

func (p *flakyPublisher) PublishJSON(ctx context.Context, subject string, v any, msgID string) error {
	if strings.HasPrefix(subject, p.prefix) && p.fails.Add(-1) >= 0 {
		return fmt.Errorf("publish to %s: %w", subject, errInjected)
	}
	return p.inner.PublishJSON(ctx, subject, v, msgID)
}

// barrier makes the first parties callers of wait meet: none returns until
// all have arrived. Later callers pass straight through.
type barrier struct {
	mu      sync.Mutex
	parties int
	all     chan struct{}
}

func newBarrier(parties int) *barrier {
	return &barrier{parties: parties, all: make(chan struct{})}
}

func (b *barrier) wait() error {
	b.mu.Lock()
	if b.parties == 0 {
		b.mu.Unlock()
		return nil
	}
	b.parties--
	if b.parties == 0 {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-time.After(testTimeout):
		return errors.New("barrier: the other party never came")
	}
}

// racingKV makes coordinators read the same revision: each Get is done,
// then waits at the barrier, so both go on to compare-and-set against the
// revision they read and one of them must lose.
type racingKV struct {
	jetstream.KeyValue
	b *barrier
}

func (k *racingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	en, err := k.KeyValue.Get(ctx, key)
	if berr := k.b.wait(); berr != nil {
		return nil, berr
	}
	return en, err
}

// casConflicts reads autocoder_coordinator_cas_conflicts_total from reg.
func casConflicts(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	got, ok := counters(t, reg, "autocoder_coordinator_cas_conflicts_total")[""]
	if !ok {
		t.Fatal("no cas conflict metric")
	}
	return got
}

// counters reads the counter family name from reg, by the value of its
// first label ("" for a family without labels).
func counters(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			label := ""
			if ls := m.GetLabel(); len(ls) > 0 {
				label = ls[0].GetValue()
			}
			out[label] = m.GetCounter().GetValue()
		}
	}
	return out
}

// coordinatorPair gets every stage result: both coordinators apply each
// one, concurrently (a == b means one coordinator, once).
type coordinatorPair struct{ a, b *coordinator.Coordinator }

// drive answers every stage command the jobs' coordinators publish until no
// new command comes, applying all the results of one round concurrently
// through every pair, then checks that every job finished successfully.
func drive(t *testing.T, e *env, pairs []*coordinatorPair, jobIDs ...string) {
	t.Helper()
	ctx := ctxT(t)
	seen := map[string]bool{}
	for round := 0; ; round++ {
		if round > 50 {
			t.Fatal("jobs still dispatching after 50 rounds")
		}
		var msgs []*bus.Message
		for _, cmd := range e.commands(t) {
			key := bus.StageMsgID(cmd.JobID, cmd.Seq)
			if !seen[key] {
				seen[key] = true
				msgs = append(msgs, resultMsg(t, answer(t, cmd)))
			}
		}
		if len(msgs) == 0 {
			break
		}
		var handlers []*coordinator.Coordinator
		for _, p := range pairs {
			handlers = append(handlers, p.a)
			if p.b != p.a {
				handlers = append(handlers, p.b)
			}
		}
		errc := make(chan error, len(msgs)*len(handlers))
		var wg sync.WaitGroup
		for _, msg := range msgs {
			for _, c := range handlers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errc <- c.HandleResult(ctx, msg)
				}()
			}
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			if err != nil {
				t.Fatalf("HandleResult: %v", err)
			}
		}
	}
	for _, id := range jobIDs {
		if r := e.result(t, id); !r.Success {
			t.Errorf("job %s: status %s, error %q", id, r.Status, r.Error)
		}
	}
}

// assertExactlyOnce checks that the job's stage commands have the seqs
// 1..n, each stored once with its de-duplication ID, and that its events
// are each stored once.
func assertExactlyOnce(t *testing.T, e *env, jobID string) {
	t.Helper()
	perSeq := map[int]int{}
	maxSeq := 0
	for _, pool := range messages.Pools() {
		msgs, _ := streamMsgs(t, e.res.Stages[pool])
		for _, m := range msgs {
			var c messages.StageCommand
			if err := json.Unmarshal(m.data, &c); err != nil {
				t.Fatal(err)
			}
			if c.JobID != jobID {
				continue
			}
			perSeq[c.Seq]++
			maxSeq = max(maxSeq, c.Seq)
			if want := bus.StageMsgID(jobID, c.Seq); m.msgID != want {
				t.Errorf("command %s/%d has Msg-Id %q, want %q", c.Stage, c.Seq, m.msgID, want)
			}
		}
	}
	for seq := 1; seq <= maxSeq; seq++ {
		if perSeq[seq] != 1 {
			t.Errorf("job %s: command seq %d stored %d times, want once", jobID, seq, perSeq[seq])
		}
	}
	if maxSeq == 0 {
		t.Errorf("job %s: no commands", jobID)
	}
	assertUniqueEvents(t, e, jobID)
}

// assertUniqueEvents checks that no progress event of the job is stored twice.
func assertUniqueEvents(t *testing.T, e *env, jobID string) {
	t.Helper()
	seen := map[string]int{}
	for _, ev := range e.events(t, jobID) {
		seen[fmt.Sprintf("%s/%d/%s", ev.Type, ev.Seq, ev.Stage)]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("job %s: event %s stored %d times", jobID, k, n)
		}
	}
}
