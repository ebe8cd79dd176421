package coordinator_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The tests of what keeps a stage hop short: the outbox cleared late or
// not at all (outbox.go), one job's steps taken one at a time
// (joblocks.go), and results taken as their workers offer them (offer.go).

// TestOutboxIsReplacedNotCleared: steps of a job that come faster than
// OutboxClearDelay write the state once each (no clearing write between
// them), publish each command once, and do not publish the previous
// step's outbox again; Close clears the last one.
func TestOutboxIsReplacedNotCleared(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clearDelay = time.Hour
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-fast", answerSpec())); err != nil {
		t.Fatal(err)
	}
	if n := e.outboxLen(t, "job-fast"); n == 0 {
		t.Fatal("the outbox was cleared at once; want it left for the next step to replace")
	}
	before := e.counts(t, "job-fast")
	plan := e.commands(t)[0]
	if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, plan))); err != nil {
		t.Fatal(err)
	}
	after := e.counts(t, "job-fast")
	if after.StateRev != before.StateRev+1 {
		t.Errorf("the plan's step wrote the state %d times, want once (the outbox replaced, not cleared)", after.StateRev-before.StateRev)
	}
	gen := e.commands(t)[1:]
	if len(gen) != 2 {
		t.Fatalf("after the plan: %+v, want code and tests", gen)
	}
	for _, cmd := range gen {
		if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, cmd))); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.counts(t, "job-fast").StateRev; got != after.StateRev+2 {
		t.Errorf("code and tests wrote the state %d times, want twice", got-after.StateRev)
	}
	assertExactlyOnce(t, e, "job-fast")
	assertUniqueEvents(t, e, "job-fast")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := e.outboxLen(t, "job-fast"); n != 0 {
		t.Errorf("Close left an outbox of %d commands that are out: a restart would publish them again", n)
	}
}

// TestOutboxIsClearedAfterTheDelay: a job that waits on a stage longer
// than OutboxClearDelay has its outbox cleared, so a restart long after
// publishes nothing again.
func TestOutboxIsClearedAfterTheDelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clearDelay = 50 * time.Millisecond
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-slow", answerSpec())); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testTimeout)
	for e.outboxLen(t, "job-slow") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the outbox was never cleared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := e.counts(t, "job-slow")
	if err := e.coordinator(t, nil, nil, nil).Recover(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := e.counts(t, "job-slow"); got != before {
		t.Errorf("a restart published again: %+v, then %+v", before, got)
	}
}

// TestOneJobsResultsTogetherDoNotConflict: the code and tests results of
// a job applied at once by one coordinator (as its parallel result slots
// do) are stepped one after the other, not on the same copy: no
// compare-and-set conflict, and each job goes on.
func TestOneJobsResultsTogetherDoNotConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	c := e.coordinator(t, nil, nil, reg)
	ids := []string{"job-a", "job-b", "job-c", "job-d"}
	for _, id := range ids {
		if err := c.HandleSubmit(ctxT(t), submitMsg(t, id, answerSpec())); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range e.commands(t) { // the plans
		if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, cmd))); err != nil {
			t.Fatal(err)
		}
	}
	var gen []messages.StageCommand
	for _, cmd := range e.commands(t) {
		if cmd.Stage == messages.StageCode || cmd.Stage == messages.StageTests {
			gen = append(gen, cmd)
		}
	}
	if len(gen) != 2*len(ids) {
		t.Fatalf("%d code and tests commands, want %d", len(gen), 2*len(ids))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, len(gen))
	for _, cmd := range gen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- c.HandleResult(ctxT(t), resultMsg(t, answer(t, cmd)))
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := casConflicts(t, reg); n != 0 {
		t.Errorf("%v compare-and-set conflicts with one coordinator, want 0", n)
	}
	builds := map[string]bool{}
	for _, cmd := range e.commands(t) {
		if cmd.Stage == messages.StageBuild || cmd.Stage == messages.StagePackages {
			builds[cmd.JobID] = true
		}
	}
	for _, id := range ids {
		if !builds[id] {
			t.Errorf("job %s did not go on after its code and tests", id)
		}
		assertExactlyOnce(t, e, id)
	}
}

// TestOfferIsTaken: a result its worker offers steps the job and is
// answered taken. Published after all (the worker stopped waiting for the
// answer), it steps nothing more: while the offer's step runs it waits for
// it, and after it the machine ignores it (which of the two a run sees is
// up to the scheduler; both are asserted the same way).
func TestOfferIsTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clearDelay = time.Hour // a step writes the state once
	reg := prometheus.NewRegistry()
	c := e.coordinator(t, nil, nil, reg)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-offer", answerSpec())); err != nil {
		t.Fatal(err)
	}
	res := answer(t, e.commands(t)[0])
	answered := make(chan bool, 1)
	c.HandleOffer(ctxT(t), offerMsg(t, res), func(taken bool) { answered <- taken })
	if err := c.HandleResult(ctxT(t), resultMsg(t, res)); err != nil { // during the offer's step, or after it
		t.Fatal(err)
	}
	if !<-answered {
		t.Fatal("the offer was not taken")
	}
	if err := c.HandleResult(ctxT(t), resultMsg(t, res)); err != nil { // after it
		t.Fatal(err)
	}
	if n := len(e.commands(t)); n != 3 {
		t.Errorf("%d commands after the plan, want the plan, code and tests", n)
	}
	if got := taken(t, reg); got["offer"] != 1 {
		t.Errorf("results taken %v, want one offered", got)
	}
	assertExactlyOnce(t, e, "job-offer")
	assertUniqueEvents(t, e, "job-offer")
}

// TestOfferNotTaken: an offer that is claim-checked (its body in the
// claims store), comes on another pool's subject, or whose step fails is
// answered not taken; the result, published then, steps the job.
func TestOfferNotTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flaky := &flakyPublisher{inner: e.pub, prefix: "autocoder.stage."}
	reg := prometheus.NewRegistry()
	c := e.coordinator(t, nil, flaky, reg)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-late", answerSpec())); err != nil {
		t.Fatal(err)
	}
	res := answer(t, e.commands(t)[0])
	plan := offerMsg(t, res)
	claimed := bus.NewMessage(plan.Subject(), plan.Data(), map[string][]string{bus.HeaderClaimCheck: {"claim-1"}}, 1)
	if offer(t, c, claimed) {
		t.Error("a claim-checked offer was taken")
	}
	otherPool := bus.NewMessage(bus.OfferSubject(messages.PoolSandbox, res.JobID), plan.Data(), nil, 1)
	if offer(t, c, otherPool) {
		t.Error("an offer on another pool's subject was taken")
	}
	flaky.fails.Store(1) // the step stores the state, then fails to dispatch
	if offer(t, c, plan) {
		t.Error("an offer whose step failed was taken")
	}
	if err := c.HandleResult(ctxT(t), resultMsg(t, res)); err != nil {
		t.Fatal(err)
	}
	if n := len(e.commands(t)); n != 3 {
		t.Fatalf("%d commands after the plan, want the plan, code and tests", n)
	}
	if got := taken(t, reg); got["offer"] != 0 || got["stream"] != 1 {
		t.Errorf("results taken %v, want the stream's only", got)
	}
	assertExactlyOnce(t, e, "job-late")
}

// TestOutboxOfAFailedStepIsSentByItsCoordinator: an offer's step stores
// the state, then fails to send the next commands, and the result it
// answered not taken never comes by the stream (the worker's publish
// failed too; its command, redelivered, is no longer pending). The
// coordinator that stored the record sends its outbox itself, and the
// job goes on.
func TestOutboxOfAFailedStepIsSentByItsCoordinator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flaky := &flakyPublisher{inner: e.pub, prefix: "autocoder.stage."}
	c := e.coordinator(t, nil, flaky, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-lost", answerSpec())); err != nil {
		t.Fatal(err)
	}
	flaky.fails.Store(1) // the step stores the state, then fails to dispatch
	if offer(t, c, offerMsg(t, answer(t, e.commands(t)[0]))) {
		t.Fatal("an offer whose step failed was taken")
	}
	for deadline := time.Now().Add(testTimeout); len(e.commands(t)) < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d commands: the outbox of the failed step was never sent", len(e.commands(t)))
		}
	}
	if n := e.outboxLen(t, "job-lost"); n != 0 {
		t.Errorf("outbox of %d commands left after it was sent", n)
	}
}

// taken reads autocoder_coordinator_results_taken_total by copy.
func taken(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	return counters(t, reg, "autocoder_coordinator_results_taken_total")
}

// TestFailedAnnounceIsCarriedByTheNextStep: a step's events fail to go
// out after the job's next step began on the kept copy, which counts that
// step's outbox as out, and stored a record that replaces it. The next
// step announces them before its own: none is lost, none stored twice.
func TestFailedAnnounceIsCarriedByTheNextStep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pub := &gatedEvents{inner: e.pub}
	c := e.coordinator(t, nil, pub, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-ann", answerSpec())); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, e.commands(t)[0]))); err != nil { // the plan
		t.Fatal(err)
	}
	byStage := map[messages.Stage]messages.StageCommand{}
	for _, cmd := range e.commands(t) {
		byStage[cmd.Stage] = cmd
	}
	code, tests := byStage[messages.StageCode], byStage[messages.StageTests]
	// The code result's first event waits until the tests result's step
	// has stored its record and dispatched the next stage, then fails.
	next := make(chan error, 1)
	pub.gate = func() error {
		go func() { next <- c.HandleResult(ctxT(t), resultMsg(t, answer(t, tests))) }()
		for deadline := time.Now().Add(testTimeout); ; time.Sleep(5 * time.Millisecond) {
			for _, cmd := range e.commands(t) {
				if cmd.Seq > tests.Seq {
					return errInjected
				}
			}
			if time.Now().After(deadline) {
				return errors.New("the tests result's step never dispatched")
			}
		}
	}
	codeResult := resultMsg(t, answer(t, code))
	if err := c.HandleResult(ctxT(t), codeResult); !errors.Is(err, errInjected) {
		t.Fatalf("the code result's step = %v, want the injected failure", err)
	}
	if err := <-next; err != nil {
		t.Fatalf("the tests result's step: %v", err)
	}
	if err := c.HandleResult(ctxT(t), codeResult); err != nil { // redelivered: stale now
		t.Fatal(err)
	}
	finished := map[messages.Stage]bool{}
	for _, ev := range e.events(t, "job-ann") {
		if ev.Type == messages.EventStageFinished {
			finished[ev.Stage] = true
		}
	}
	if !finished[messages.StageCode] || !finished[messages.StageTests] {
		t.Errorf("stage_finished events for %v, want code and tests: the failed step's events were lost", finished)
	}
	assertUniqueEvents(t, e, "job-ann")
}

// TestFailedAnnounceSurvivesAStepThatChangesNothing: while a step's
// events go out, the job's next turn is an input that changes nothing (a
// duplicate); then the events fail. That turn must not clear the stored
// outbox it did not send itself: the failed step's input, redelivered,
// finds the outbox and sends its events.
func TestFailedAnnounceSurvivesAStepThatChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pub := &gatedEvents{inner: e.pub}
	c := e.coordinator(t, nil, pub, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-dup", answerSpec())); err != nil {
		t.Fatal(err)
	}
	planResult := resultMsg(t, answer(t, e.commands(t)[0]))
	if err := c.HandleResult(ctxT(t), planResult); err != nil {
		t.Fatal(err)
	}
	var code messages.StageCommand
	for _, cmd := range e.commands(t) {
		if cmd.Stage == messages.StageCode {
			code = cmd
		}
	}
	pub.gate = func() error {
		if err := c.HandleResult(ctxT(t), planResult); err != nil { // a duplicate: changes nothing
			return err
		}
		return errInjected
	}
	codeResult := resultMsg(t, answer(t, code))
	if err := c.HandleResult(ctxT(t), codeResult); !errors.Is(err, errInjected) {
		t.Fatalf("the code result's step = %v, want the injected failure", err)
	}
	if err := c.HandleResult(ctxT(t), codeResult); err != nil { // redelivered
		t.Fatal(err)
	}
	for _, ev := range e.events(t, "job-dup") {
		if ev.Type == messages.EventStageFinished && ev.Stage == messages.StageCode {
			return
		}
	}
	t.Error("no stage_finished event for code: the failed step's events were lost")
}

// gatedEvents calls gate, once it is set, before the next event it
// publishes, and fails that publish with gate's error (once).
type gatedEvents struct {
	inner coordinator.Publisher
	gate  func() error
	once  sync.Once
}

func (p *gatedEvents) PublishJSON(ctx context.Context, subject string, v any, msgID string) error {
	var err error
	if p.gate != nil && strings.HasPrefix(subject, bus.EventSubject("")) {
		p.once.Do(func() { err = p.gate() })
	}
	if err != nil {
		return err
	}
	return p.inner.PublishJSON(ctx, subject, v, msgID)
}

// TestFinishedJobsOutboxIsSentByItsCoordinator: the step that finishes a
// job stores its state, then fails to send its events. No input will
// come again for a finished job (a cancel made in-process here; a
// deadline's sweep or a dead letter's advisory in a fleet), so the
// coordinator sends the outbox itself: the job's last events go out and
// its outbox is cleared, without another input. The job counts once in
// the finished jobs, though its result went out twice.
func TestFinishedJobsOutboxIsSentByItsCoordinator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flaky := &flakyPublisher{inner: e.pub, prefix: bus.EventSubject("job-ended")}
	reg := prometheus.NewRegistry()
	c := e.coordinator(t, nil, flaky, reg)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-ended", answerSpec())); err != nil {
		t.Fatal(err)
	}
	flaky.fails.Store(1) // the cancel's step stores the state, then fails to announce
	if err := c.Cancel(ctxT(t), "job-ended", "test"); err == nil {
		t.Fatal("Cancel: no error, though its announcement failed")
	}
	finished := func() bool {
		for _, ev := range e.events(t, "job-ended") {
			if ev.Type == messages.EventJobFinished {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(testTimeout); !finished(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no job_finished event: the outbox of the finished job was never sent")
		}
	}
	if res := e.result(t, "job-ended"); res.Status != messages.StatusCancelled {
		t.Errorf("result status %s, want cancelled", res.Status)
	}
	for deadline := time.Now().Add(testTimeout); e.outboxLen(t, "job-ended") != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("outbox of %d commands left after it was sent", e.outboxLen(t, "job-ended"))
		}
	}
	n := 0.0
	for _, v := range counters(t, reg, "autocoder_jobs_finished_total") {
		n += v
	}
	if n != 1 {
		t.Errorf("the job counted %v times in autocoder_jobs_finished_total, want once", n)
	}
}

// blockingKV holds every compare-and-set of the state bucket until release
// is closed.
type blockingKV struct {
	jetstream.KeyValue
	entered chan struct{}
	release chan struct{}
}

func (b *blockingKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.KeyValue.Update(ctx, key, value, rev)
}

// TestCloseWaitsForOffersInHand: Close returns only once the offers it
// was stepping are done, so none of them still uses the connection the
// stack closes next; an offer that comes once Close has begun is answered
// not taken (the worker publishes the result for the next coordinator).
func TestCloseWaitsForOffersInHand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.clearDelay = time.Hour
	kv := &blockingKV{KeyValue: e.res.JobState, entered: make(chan struct{}, 1), release: make(chan struct{})}
	c := e.coordinator(t, kv, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-close", answerSpec())); err != nil {
		t.Fatal(err)
	}
	res := answer(t, e.commands(t)[0])
	answered := make(chan bool, 1)
	c.HandleOffer(ctxT(t), offerMsg(t, res), func(taken bool) { answered <- taken })
	select {
	case <-kv.entered: // the offer's step is at its compare-and-set
	case <-time.After(time.Minute):
		t.Fatal("the offer's step never reached the state")
	}
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while an offer was still being stepped")
	case <-time.After(200 * time.Millisecond):
	}
	close(kv.release)
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close never returned")
	}
	if !<-answered {
		t.Error("the offer in hand was not taken")
	}
	if late := offer(t, c, offerMsg(t, res)); late {
		t.Error("an offer after Close was taken")
	}
}
