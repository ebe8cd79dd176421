package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/pkg/messages"
)

const sampleRef = "sha256:" + "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12" + ".csv"

func TestSubmissionCreatesStateAndDispatchesFirstStage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		spec      messages.JobSpec
		wantStage messages.Stage
		wantPool  messages.Pool
	}{
		{"no samples: plan", answerSpec(), messages.StagePlan, messages.PoolLLM},
		{"samples: profile them first", func() messages.JobSpec {
			s := answerSpec()
			s.Samples = map[string]string{"sales": sampleRef}
			return s
		}(), messages.StageProfile, messages.PoolSandbox},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c := e.coordinator(t, nil, nil, nil)
			if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-1", tc.spec)); err != nil {
				t.Fatalf("HandleSubmit: %v", err)
			}
			st, err := c.State(ctxT(t), "job-1")
			if err != nil {
				t.Fatalf("State: %v", err)
			}
			if st.JobID != "job-1" || st.Status != messages.StatusRunning || !st.SubmittedAt.Equal(t0) {
				t.Errorf("state: job %q status %q submitted %v", st.JobID, st.Status, st.SubmittedAt)
			}
			if st.Spec.Options.Model != "test-model" || st.Spec.Options.MaxIterations != messages.DefaultMaxIterations {
				t.Errorf("spec not normalised with the coordinator's defaults: %+v", st.Spec.Options)
			}

			cmds := e.commands(t)
			if len(cmds) != 1 {
				t.Fatalf("%d stage commands, want 1: %+v", len(cmds), cmds)
			}
			want := messages.StageCommand{V: messages.WireVersion, JobID: "job-1", Seq: 1, Stage: tc.wantStage,
				Model: "test-model", Cache: messages.CacheAuto}
			if diff := cmp.Diff(want, cmds[0], cmpopts.IgnoreFields(messages.StageCommand{}, "Input")); diff != "" {
				t.Errorf("first command (-want +got):\n%s", diff)
			}
			if got := messages.DefaultStages().Pool(tc.wantStage); got != tc.wantPool {
				t.Errorf("stage %s goes to pool %s, want %s", tc.wantStage, got, tc.wantPool)
			}
			if tc.wantStage == messages.StageProfile {
				var in messages.ProfileInput
				if err := json.Unmarshal(cmds[0].Input, &in); err != nil {
					t.Fatal(err)
				}
				wantRefs := []messages.SampleRef{{Name: "sales", Object: sampleRef, FileName: "sales.csv"}}
				if diff := cmp.Diff(wantRefs, in.Samples); diff != "" {
					t.Errorf("profile samples (-want +got):\n%s", diff)
				}
			}
			var types []messages.EventType
			for _, ev := range e.events(t, "job-1") {
				types = append(types, ev.Type)
			}
			if diff := cmp.Diff([]messages.EventType{messages.EventJobStarted, messages.EventStageQueued}, types); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if n := e.outboxLen(t, "job-1"); n != 0 {
				t.Errorf("outbox holds %d commands after a clean step, want 0", n)
			}
		})
	}
}

// TestInvalidSubmissionIsFinished: a submission with a valid job ID but a
// spec that cannot run finishes the job at once with a failed result and a
// job_finished event, so a waiting client hears why.
func TestInvalidSubmissionIsFinished(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string // the submission as it arrives on the wire
		want string // in the result's error
	}{
		{"empty prompt", `{"v":1,"job_id":"job-bad","spec":{"prompt":"  "}}`, "prompt: is required"},
		{"sample is a path, not an object", `{"v":1,"job_id":"job-bad","spec":{"prompt":"p","samples":{"sales":"/home/me/sales.csv"}}}`,
			"samples.sales: must be an object reference"},
		{"unsupported output type", `{"v":1,"job_id":"job-bad","spec":{"prompt":"p","outputs":{"n":"decimal"}}}`, `outputs.n: unsupported type "decimal"`},
		{"negative max_iterations", `{"v":1,"job_id":"job-bad","spec":{"prompt":"p","options":{"max_iterations":-1}}}`, "options.max_iterations"},
		{"wrong type in the spec", `{"v":1,"job_id":"job-bad","spec":{"prompt":"p","options":{"max_iterations":"ten"}}}`, "max_iterations"},
		{"spec is not an object", `{"v":1,"job_id":"job-bad","spec":"summarize"}`, "spec"},
		{"a newer message version", `{"v":99,"job_id":"job-bad","spec":{"prompt":"p"}}`, "version 99 is newer"},
		// Contract 1: an unknown field is refused, naming it, on the bus as
		// through the API; a typo never leaves the default in its place.
		{"an unknown option", `{"v":1,"job_id":"job-bad","spec":{"prompt":"p","options":{"max_iteration":3}}}`, "options.max_iteration"},
		{"an unknown spec field", `{"v":1,"job_id":"job-bad","spec":{"prompt":"p","sample":{}}}`, "sample"},
		{"an unknown run option", `{"v":1,"job_id":"job-bad","run":{"from_job":"job-src","options":{"retry":2}}}`, "retry"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c := e.coordinator(t, nil, nil, nil)
			msg := bus.NewMessage(bus.SubjectJobsSubmit, []byte(tc.raw), nil, 1)
			if err := c.HandleSubmit(ctxT(t), msg); err != nil {
				t.Fatalf("HandleSubmit = %v, want nil (the job is finished, not dropped)", err)
			}
			res := e.result(t, "job-bad")
			if res.Success || res.Status != messages.StatusFailed || res.FinishedAt == nil {
				t.Errorf("result: success %v status %s finished %v", res.Success, res.Status, res.FinishedAt)
			}
			if !strings.HasPrefix(res.Error, "invalid job spec: ") || !strings.Contains(res.Error, tc.want) {
				t.Errorf("result error %q does not say %q", res.Error, tc.want)
			}
			evs := e.events(t, "job-bad")
			if len(evs) != 1 || evs[0].Type != messages.EventJobFinished || evs[0].Success == nil || *evs[0].Success || evs[0].Message != res.Error {
				t.Errorf("events: %+v, want one job_finished with success false and the error", evs)
			}
			if cmds := e.commands(t); len(cmds) != 0 {
				t.Errorf("an invalid job dispatched %+v", cmds)
			}
			// The same submission again changes nothing visible.
			before := e.counts(t, "job-bad")
			if err := c.HandleSubmit(ctxT(t), msg); err != nil {
				t.Fatalf("again: %v", err)
			}
			if got := e.counts(t, "job-bad"); got.EventMsgs != before.EventMsgs || got.StageMsgs != 0 {
				t.Errorf("a repeated invalid submission published more: %+v then %+v", before, got)
			}
		})
	}
}

// TestUnaddressableSubmissionIsTerminated: without a usable job ID there is
// no one to tell, so the message is terminated (bus.Permanent).
func TestUnaddressableSubmissionIsTerminated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	for _, raw := range []string{`not json`, `{"v":1,"job_id":"a.b","spec":{"prompt":"p"}}`, `{"v":1,"spec":{"prompt":"p"}}`} {
		err := c.HandleSubmit(ctxT(t), bus.NewMessage(bus.SubjectJobsSubmit, []byte(raw), nil, 1))
		if !bus.IsPermanent(err) {
			t.Errorf("HandleSubmit(%s) = %v, want a permanent error", raw, err)
		}
	}
}

// TestDuplicateSubmissionChangesNothing: the same job ID again, whether the
// same submission redelivered, a different spec or an invalid one, leaves
// the running job alone.
func TestDuplicateSubmissionChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-dup", answerSpec())); err != nil {
		t.Fatal(err)
	}
	before := e.counts(t, "job-dup")
	other := answerSpec()
	other.Prompt = "something else entirely"
	dups := map[string]*bus.Message{
		"redelivered": submitMsg(t, "job-dup", answerSpec()),
		"other spec":  submitMsg(t, "job-dup", other),
		"invalid":     submitMsg(t, "job-dup", messages.JobSpec{Prompt: ""}),
	}
	for name, msg := range dups {
		if err := c.HandleSubmit(ctxT(t), msg); err != nil {
			t.Errorf("%s: HandleSubmit = %v", name, err)
		}
		if diff := cmp.Diff(before, e.counts(t, "job-dup")); diff != "" {
			t.Errorf("%s duplicate changed the job (-before +after):\n%s", name, diff)
		}
	}
	st, err := c.State(ctxT(t), "job-dup")
	if err != nil {
		t.Fatal(err)
	}
	if st.Spec.Prompt != answerSpec().Prompt || st.Status != messages.StatusRunning {
		t.Errorf("state after duplicates: prompt %q status %s", st.Spec.Prompt, st.Status)
	}
}

// TestStaleAndDuplicateResultsChangeNothing: results that do not match a
// pending stage (unknown seq, wrong stage, already applied) leave the state,
// the stage streams and the events as they were.
func TestStaleAndDuplicateResultsChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-st", answerSpec())); err != nil {
		t.Fatal(err)
	}
	plan := e.commands(t)[0]
	good := answer(t, plan)

	unknownSeq := answer(t, plan)
	unknownSeq.Seq = 99
	wrongStage := answer(t, messages.StageCommand{JobID: plan.JobID, Seq: plan.Seq, Stage: messages.StageCode})
	before := e.counts(t, "job-st")
	for name, r := range map[string]*messages.StageResult{"unknown seq": unknownSeq, "wrong stage": wrongStage} {
		if err := c.HandleResult(ctxT(t), resultMsg(t, r)); err != nil {
			t.Errorf("%s: HandleResult = %v", name, err)
		}
		if diff := cmp.Diff(before, e.counts(t, "job-st")); diff != "" {
			t.Errorf("%s result changed the job (-before +after):\n%s", name, diff)
		}
	}

	if err := c.HandleResult(ctxT(t), resultMsg(t, good)); err != nil {
		t.Fatal(err)
	}
	after := e.counts(t, "job-st")
	if after.StageMsgs <= before.StageMsgs {
		t.Fatalf("the plan result dispatched nothing: %+v", after)
	}
	if err := c.HandleResult(ctxT(t), resultMsg(t, good)); err != nil {
		t.Errorf("duplicate: HandleResult = %v", err)
	}
	if diff := cmp.Diff(after, e.counts(t, "job-st")); diff != "" {
		t.Errorf("a duplicate result changed the job (-before +after):\n%s", diff)
	}
}

func TestResultForUnknownJobIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	r := answer(t, messages.StageCommand{JobID: "job-ghost", Seq: 1, Stage: messages.StagePlan})
	if err := c.HandleResult(ctxT(t), resultMsg(t, r)); err != nil {
		t.Fatalf("HandleResult = %v, want nil", err)
	}
	if _, err := e.res.JobState.Get(ctxT(t), "job-ghost"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("a result for an unknown job created state (err %v)", err)
	}
	if diff := cmp.Diff(counts{}, e.counts(t, "job-ghost")); diff != "" {
		t.Errorf("published for an unknown job (-want +got):\n%s", diff)
	}
	for _, raw := range []string{`{`, `{"v":1,"job_id":"x>y","seq":1,"stage":"plan"}`} {
		if err := c.HandleResult(ctxT(t), bus.NewMessage("autocoder.results.x", []byte(raw), nil, 1)); !bus.IsPermanent(err) {
			t.Errorf("HandleResult(%s) = %v, want permanent", raw, err)
		}
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-c", answerSpec())); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctxT(t), "job-c", "user asked"); err != nil {
		t.Fatal(err)
	}
	res := e.result(t, "job-c")
	if res.Status != messages.StatusCancelled || res.Error != "cancelled: user asked" {
		t.Errorf("result: status %s error %q", res.Status, res.Error)
	}
	if len(res.Stages) != 1 || res.Stages[0].Outcome != "cancelled" || res.Stages[0].DispatchedAt.IsZero() {
		t.Errorf("the stage in flight at the cancel: %+v, want it cancelled", res.Stages)
	}
	// The plan result arriving late is stale.
	before := e.counts(t, "job-c")
	if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, e.commands(t)[0]))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, e.counts(t, "job-c")); diff != "" {
		t.Errorf("a result after cancel changed the job (-before +after):\n%s", diff)
	}
	if err := c.Cancel(ctxT(t), "job-none", "x"); err != nil {
		t.Errorf("cancel of an unknown job = %v, want nil", err)
	}
}

// TestOutboxRecovery: a coordinator that stored a state and then failed to
// publish its commands (a crash, NATS gone) leaves them in the record's
// outbox; Recover, or the redelivered event, publishes them exactly once.
func TestOutboxRecovery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		recover func(t *testing.T, e *env, msg *bus.Message) error
	}{
		{"Recover at start", func(t *testing.T, e *env, _ *bus.Message) error {
			return e.coordinator(t, nil, nil, nil).Recover(ctxT(t))
		}},
		{"the event redelivered", func(t *testing.T, e *env, msg *bus.Message) error {
			return e.coordinator(t, nil, nil, nil).HandleSubmit(ctxT(t), msg)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			flaky := &flakyPublisher{inner: e.pub, prefix: "autocoder.stage."}
			flaky.fails.Store(1)
			crashing := e.coordinator(t, nil, flaky, nil)
			msg := submitMsg(t, "job-ob", answerSpec())
			if err := crashing.HandleSubmit(ctxT(t), msg); !errors.Is(err, errInjected) {
				t.Fatalf("HandleSubmit = %v, want the injected failure", err)
			}
			if n := e.outboxLen(t, "job-ob"); n == 0 {
				t.Fatal("state stored without its commands in the outbox")
			}
			if cmds := e.commands(t); len(cmds) != 0 {
				t.Fatalf("commands published despite the failure: %+v", cmds)
			}

			if err := tc.recover(t, e, msg); err != nil {
				t.Fatalf("recover: %v", err)
			}
			cmds := e.commands(t)
			if len(cmds) != 1 || cmds[0].Stage != messages.StagePlan {
				t.Fatalf("after recovery: %+v, want the plan command once", cmds)
			}
			if n := e.outboxLen(t, "job-ob"); n != 0 {
				t.Errorf("outbox still holds %d commands once they are out: every restart would publish them again", n)
			}
			// Again: de-duplicated by Msg-Id, nothing more is stored.
			before := e.counts(t, "job-ob")
			if err := e.coordinator(t, nil, nil, nil).Recover(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before, e.counts(t, "job-ob")); diff != "" {
				t.Errorf("a second recovery published again (-before +after):\n%s", diff)
			}
			assertUniqueEvents(t, e, "job-ob")

			// The job goes on.
			c := e.coordinator(t, nil, nil, nil)
			if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, cmds[0]))); err != nil {
				t.Fatal(err)
			}
			if n := len(e.commands(t)); n < 2 {
				t.Errorf("the plan result dispatched nothing after recovery (%d commands)", n)
			}
			if n := e.outboxLen(t, "job-ob"); n != 0 {
				t.Errorf("outbox holds %d commands after a clean step", n)
			}
		})
	}
}

// TestOutboxRecoveryMidJob: the publish fails while a stage result is
// applied; the redelivered result publishes the next commands once, and
// the job finishes.
func TestOutboxRecoveryMidJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flaky := &flakyPublisher{inner: e.pub, prefix: "autocoder.stage."}
	c := e.coordinator(t, nil, flaky, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-mid", answerSpec())); err != nil {
		t.Fatal(err)
	}
	flaky.fails.Store(1)
	plan := resultMsg(t, answer(t, e.commands(t)[0]))
	if err := c.HandleResult(ctxT(t), plan); !errors.Is(err, errInjected) {
		t.Fatalf("HandleResult = %v, want the injected failure", err)
	}
	if err := c.HandleResult(ctxT(t), plan); err != nil {
		t.Fatalf("redelivered: %v", err)
	}
	drive(t, e, []*coordinatorPair{{c, c}}, "job-mid")
	assertExactlyOnce(t, e, "job-mid")
}

// TestConcurrentCoordinatorsCASConflict: two coordinators apply the code
// and tests results of one job at the same moment, both reading the same
// revision. One loses the compare-and-set, steps again on the fresh state,
// and the job moves on exactly once.
func TestConcurrentCoordinatorsCASConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-cas", answerSpec())); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleResult(ctxT(t), resultMsg(t, answer(t, e.commands(t)[0]))); err != nil {
		t.Fatal(err)
	}
	var gen []messages.StageCommand
	for _, cmd := range e.commands(t) {
		if cmd.Stage == messages.StageCode || cmd.Stage == messages.StageTests {
			gen = append(gen, cmd)
		}
	}
	if len(gen) != 2 {
		t.Fatalf("want code and tests pending together, got %+v", gen)
	}

	b := newBarrier(2)
	reg1, reg2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	c1 := e.coordinator(t, &racingKV{KeyValue: e.res.JobState, b: b}, nil, reg1)
	c2 := e.coordinator(t, &racingKV{KeyValue: e.res.JobState, b: b}, nil, reg2)
	before := len(e.commands(t))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	ctx := ctxT(t)
	for i, cc := range []*coordinator.Coordinator{c1, c2} {
		msg := resultMsg(t, answer(t, gen[i]))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cc.HandleResult(ctx, msg)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("coordinator %d: %v", i+1, err)
		}
	}
	if n := casConflicts(t, reg1) + casConflicts(t, reg2); n < 1 {
		t.Errorf("cas conflicts = %v, want at least 1 (both read the same revision)", n)
	}
	st, err := c.State(ctxT(t), "job-cas")
	if err != nil {
		t.Fatal(err)
	}
	if st.Solution == nil || st.Tests == nil {
		t.Fatalf("a result was lost in the race: solution %v tests %v", st.Solution != nil, st.Tests != nil)
	}
	next := e.commands(t)[before:]
	if len(next) != 1 {
		t.Fatalf("after code and tests: %+v, want exactly one next command", next)
	}
	if p := len(st.Pending); p != 1 || st.Pending[next[0].Seq].Stage != next[0].Stage {
		t.Errorf("pending %+v does not match the one command published %s/%d", st.Pending, next[0].Stage, next[0].Seq)
	}
}

// TestConcurrentCoordinatorsConverge: two coordinators get every
// submission and every stage result of several jobs at once (each message
// delivered to both, as after a redelivery race), with results of parallel
// stages applied concurrently. Every job finishes, and every command and
// event is stored exactly once.
func TestConcurrentCoordinatorsConverge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg1, reg2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	pair := &coordinatorPair{e.coordinator(t, nil, bus.NewPublisher(e.js, bus.PublisherConfig{}), reg1),
		e.coordinator(t, nil, bus.NewPublisher(e.js, bus.PublisherConfig{}), reg2)}
	const jobs = 6
	var ids []string
	for i := range jobs {
		ids = append(ids, fmt.Sprintf("job-%d", i))
	}
	var wg sync.WaitGroup
	ctx := ctxT(t)
	errc := make(chan error, 2*jobs)
	for i, id := range ids {
		spec := answerSpec()
		if i%2 == 1 {
			spec.Samples = map[string]string{"s": sampleRef}
		}
		msg := submitMsg(t, id, spec)
		for _, c := range []*coordinator.Coordinator{pair.a, pair.b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errc <- c.HandleSubmit(ctx, msg)
			}()
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("HandleSubmit: %v", err)
		}
	}
	drive(t, e, []*coordinatorPair{pair}, ids...)
	for _, id := range ids {
		assertExactlyOnce(t, e, id)
	}
	t.Logf("cas conflicts: %v", casConflicts(t, reg1)+casConflicts(t, reg2))
}

// orderPublisher checks, as each job_finished event goes out, that the
// result it announces is already stored.
type orderPublisher struct {
	inner   coordinator.Publisher
	results jetstream.KeyValue
	mu      sync.Mutex
	checked int
	missing []string
}

func (p *orderPublisher) PublishJSON(ctx context.Context, subject string, v any, msgID string) error {
	if e, ok := v.(*messages.Event); ok && e.Type == messages.EventJobFinished {
		_, err := p.results.Get(ctx, bus.JobKey(e.JobID))
		p.mu.Lock()
		p.checked++
		if err != nil {
			p.missing = append(p.missing, e.JobID)
		}
		p.mu.Unlock()
	}
	return p.inner.PublishJSON(ctx, subject, v, msgID)
}

// TestResultStoredBeforeJobFinished: a client that reads the result as
// soon as it sees job_finished finds it.
func TestResultStoredBeforeJobFinished(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := &orderPublisher{inner: e.pub, results: e.res.JobResults}
	c := e.coordinator(t, nil, p, nil)
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-ok", answerSpec())); err != nil {
		t.Fatal(err)
	}
	drive(t, e, []*coordinatorPair{{c, c}}, "job-ok")
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-invalid", messages.JobSpec{})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleSubmit(ctxT(t), submitMsg(t, "job-cancelled", answerSpec())); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctxT(t), "job-cancelled", "test"); err != nil {
		t.Fatal(err)
	}
	if p.checked != 3 || len(p.missing) != 0 {
		t.Errorf("%d job_finished events; announced before their result was stored: %v", p.checked, p.missing)
	}
}
