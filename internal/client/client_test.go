package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestMain(m *testing.M) {
	// nats.go v1.55.0 starts this goroutine on the first async publish (an
	// object store Put) and reads its channel later, unlocked; when the
	// connection closes in between, it reads nil and waits forever. The
	// leak is the library's race, not ours.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

const testTimeout = 30 * time.Second

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// system is an embedded server with a coordinator; stage workers that
// answer every stage at once start with startWorkers.
type system struct {
	t      *testing.T
	res    *bus.Resources
	pub    *bus.Publisher
	client *client.Client
}

func newSystem(t *testing.T) *system {
	t.Helper()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	js, res := be.JS, be.Resources
	s := &system{t: t, res: res, pub: be.Publisher}
	s.client = client.New(js, res, s.pub)
	c, err := coordinator.New(coordinator.Config{States: res.JobState, Results: res.JobResults, Publisher: s.pub, Resources: res, JS: js})
	if err != nil {
		t.Fatal(err)
	}
	// The message API (tasks are kept through it).
	ctx, cancel := context.WithCancel(context.Background())
	ready, served := make(chan struct{}), make(chan error, 1)
	go func() { served <- c.ServeAPI(ctx, func() { close(ready) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeAPI: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("ServeAPI: %v", err)
	}
	s.run(res.JobsConsumer, bus.HandlerFunc(c.HandleSubmit))
	for _, pool := range messages.Pools() {
		s.run(res.ResultConsumers[pool], bus.HandlerFunc(c.HandleResult))
	}
	return s
}

// run runs a worker until the test ends.
func (s *system) run(cons jetstream.Consumer, h bus.Handler) {
	w := bus.NewWorker(cons, h, bus.WorkerConfig{Concurrency: 4})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	s.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("worker: %v", err)
		}
	})
}

// startWorkers starts a worker per pool whose stages all succeed at once.
func (s *system) startWorkers() {
	mux := stagework.NewMux(messages.DefaultStages())
	canned(mux, messages.StageProfile, messages.ProfileOutput{DataContext: "2 rows", GeneratedSchemas: map[string]string{}})
	canned(mux, messages.StagePlan, messages.Plan{Description: "d", Approach: "a"})
	solution := messages.Solution{Language: "python", Code: "def f():\n    return 42\n", Packages: []string{}, SystemPackages: []string{}}
	canned(mux, messages.StageCode, solution)
	canned(mux, messages.StageFix, solution)
	canned(mux, messages.StageTests, messages.Tests{Code: "from solution import f\n\n\ndef test_f():\n    assert f() == 42\n"})
	canned(mux, messages.StagePackages, messages.Packages{Packages: []string{}})
	canned(mux, messages.StageBuild, messages.BuildOutput{Image: "env"})
	canned(mux, messages.StageRunTests, messages.TestReport{Passed: 1})
	canned(mux, messages.StageAcceptance, messages.AcceptanceOutput{OK: true, Outputs: map[string]any{"answer": 42}})
	for _, pool := range messages.Pools() {
		r, err := stagework.NewExecutor(stagework.Config{Mux: mux, Publisher: s.pub,
			Pool: pool, Jobs: stagework.KVJobs{KV: s.res.JobState}})
		if err != nil {
			s.t.Fatal(err)
		}
		s.run(s.res.StageConsumers[pool], r)
	}
}

// canned registers a stage that answers v at once, whatever its input.
func canned[Out any](mux *stagework.Mux, stage messages.Stage, v Out) {
	stagework.Register(mux, stage, func(context.Context, *messages.StageCommand, json.RawMessage) (stagework.Output[Out], error) {
		return stagework.Output[Out]{Value: v, Usage: messages.Usage{InputTokens: 1, OutputTokens: 1, Calls: 1}}, nil
	})
}

func spec(t *testing.T) messages.JobSpec {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.csv")
	if err := os.WriteFile(p, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return messages.JobSpec{Prompt: "Count the rows.", Samples: map[string]string{"data": p},
		Outputs: map[string]messages.Type{"answer": messages.TypeInt}}
}

func TestWatchReturnsResultOnJobFinished(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.startWorkers()
	id := client.NewJobID()
	if err := s.client.Submit(ctxT(t), id, spec(t)); err != nil {
		t.Fatal(err)
	}
	var types []messages.EventType
	res, err := s.client.Watch(ctxT(t), id, func(e messages.Event) error {
		if e.JobID != id {
			t.Errorf("event of job %s while watching %s", e.JobID, id)
		}
		types = append(types, e.Type)
		return nil
	})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if res.JobID != id || !res.Success || res.Status != messages.StatusSucceeded || res.Outputs["answer"] != float64(42) {
		t.Errorf("result: job %s success %v status %s outputs %v error %q", res.JobID, res.Success, res.Status, res.Outputs, res.Error)
	}
	if len(types) < 3 || types[0] != messages.EventJobStarted || types[len(types)-1] != messages.EventJobFinished {
		t.Errorf("events %v: want job_started first and job_finished last", types)
	}
	// The sample went over the object store: the spec holds its reference.
	if ref, ok := messages.ParseObjectRef(res.Spec.Samples["data"]); !ok || ref.Ext != ".csv" {
		t.Errorf("sample on the wire = %q, want an object reference", res.Spec.Samples["data"])
	}

	// Watching a finished job replays its events and returns the same result.
	again, err := s.client.Watch(ctxT(t), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res, again); diff != "" {
		t.Errorf("second watch (-first +second):\n%s", diff)
	}
	got, err := s.client.Result(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res, got); diff != "" {
		t.Errorf("Result differs from Watch (-watch +result):\n%s", diff)
	}
}

// TestStatusOfRunningJob: with no stage worker running the job waits at its
// first stage; Status builds a result from its state, Result has none yet.
// Once workers start, the job finishes and Status returns the stored result.
func TestStatusOfRunningJob(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	id := client.NewJobID()
	if err := s.client.Submit(ctxT(t), id, spec(t)); err != nil {
		t.Fatal(err)
	}
	errStarted := errors.New("first stage dispatched")
	_, err := s.client.Watch(ctxT(t), id, func(e messages.Event) error {
		if e.Type == messages.EventStageQueued {
			return errStarted
		}
		return nil
	})
	if !errors.Is(err, errStarted) {
		t.Fatalf("Watch = %v, want the callback's error", err)
	}
	st, err := s.client.Status(ctxT(t), id)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st.JobID != id || st.Status != messages.StatusRunning || st.Success || st.FinishedAt != nil || len(st.Stages) != 0 {
		t.Errorf("status of a running job: %+v", st)
	}
	if st.Spec == nil || st.Spec.Prompt != "Count the rows." || st.Outputs == nil || st.Stages == nil {
		t.Errorf("status lacks the spec or has nil collections: %+v", st)
	}
	if _, err := s.client.Result(ctxT(t), id); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Result of a running job = %v, want ErrNotFound", err)
	}

	s.startWorkers()
	res, err := s.client.Watch(ctxT(t), id, nil)
	if err != nil || !res.Success {
		t.Fatalf("Watch: %v (%+v)", err, res)
	}
	st, err = s.client.Status(ctxT(t), id)
	if err != nil || st.Status != messages.StatusSucceeded || len(st.Stages) == 0 {
		t.Errorf("status after finishing: %v %+v", err, st)
	}
}

func TestUnknownJobNotFound(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	for name, f := range map[string]func(context.Context, string) (*messages.Result, error){
		"Status": s.client.Status, "Result": s.client.Result,
	} {
		if r, err := f(ctxT(t), "job-nobody"); !errors.Is(err, client.ErrNotFound) || r != nil {
			t.Errorf("%s of an unknown job = %v, %v; want ErrNotFound", name, r, err)
		}
	}
}

// TestWatchCancel: a watch of a job with no events (unknown, or not yet
// accepted) ends when ctx does, with ctx's error.
func TestWatchCancel(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.client.Watch(ctx, "job-silent", nil)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Watch = %v, want context.Canceled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Watch did not return after its context was cancelled")
	}

	// A deadline works the same way.
	dctx, dcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer dcancel()
	if _, err := s.client.Watch(dctx, "job-silent", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Watch = %v, want context.DeadlineExceeded", err)
	}
}

// TestInvalidSpecFinishesWithReason: the client does not validate; the
// coordinator finishes the job with the reason, and Watch returns it.
func TestInvalidSpecFinishesWithReason(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	id := client.NewJobID()
	if err := s.client.Submit(ctxT(t), id, messages.JobSpec{Prompt: " "}); err != nil {
		t.Fatal(err)
	}
	res, err := s.client.Watch(ctxT(t), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || res.Status != messages.StatusFailed || !strings.Contains(res.Error, "prompt: is required") {
		t.Errorf("result: status %s error %q", res.Status, res.Error)
	}
}

func TestSubmitErrors(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	if err := s.client.Submit(ctxT(t), "bad.id", spec(t)); err == nil {
		t.Error("Submit with an invalid job id worked")
	}
	sp := spec(t)
	sp.Samples["gone"] = filepath.Join(t.TempDir(), "gone.csv")
	if err := s.client.Submit(ctxT(t), client.NewJobID(), sp); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("Submit with a missing sample = %v, want an error naming it", err)
	}
}

func TestNewJobID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := client.NewJobID()
			mu.Lock()
			defer mu.Unlock()
			if seen[id] || !bus.ValidJobID(id) {
				t.Errorf("job id %q: duplicate or invalid", id)
			}
			seen[id] = true
		}()
	}
	wg.Wait()
}

// TestWatchFinishedJobWithoutEvents: a finished job whose events have aged
// out of the events stream is answered from its stored result instead of
// waiting forever for a job_finished that is gone.
func TestWatchFinishedJobWithoutEvents(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.startWorkers()
	id := client.NewJobID()
	if err := s.client.Submit(ctxT(t), id, spec(t)); err != nil {
		t.Fatal(err)
	}
	want, err := s.client.Watch(ctxT(t), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.res.Events.Purge(ctxT(t), jetstream.WithPurgeSubject(bus.EventSubject(id))); err != nil {
		t.Fatal(err)
	}
	called := false
	got, err := s.client.Watch(ctxT(t), id, func(messages.Event) error { called = true; return nil })
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" || called {
		t.Errorf("Watch after the events expired (-want +got), callback called %v:\n%s", called, diff)
	}
}
