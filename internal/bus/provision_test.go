package bus_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/pkg/messages"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
)

func TestProvisionIsIdempotent(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	ctx := ctxT(t)

	if _, err := bus.Open(ctx, js); !errors.Is(err, bus.ErrNotProvisioned) {
		t.Fatalf("Open before Provision: err = %v, want ErrNotProvisioned", err)
	}

	cfg := bus.ProvisionConfig{AckWait: 10 * time.Second, MaxDeliver: 3}
	first, err := bus.Provision(ctx, js, cfg)
	if err != nil {
		t.Fatalf("first Provision: %v", err)
	}
	second, err := bus.Provision(ctx, js, cfg)
	if err != nil {
		t.Fatalf("second Provision: %v", err)
	}
	if diff := cmp.Diff(configs(t, first), configs(t, second)); diff != "" {
		t.Errorf("second Provision changed configuration (-first +second):\n%s", diff)
	}

	// What the workers and coordinator rely on.
	llm := second.StageConsumers[messages.PoolLLM].CachedInfo()
	if llm.Name != "llm-workers" || llm.Config.AckWait != 10*time.Second || llm.Config.MaxDeliver != 3 ||
		llm.Config.AckPolicy != jetstream.AckExplicitPolicy || llm.Config.FilterSubject != "autocoder.stage.llm.>" {
		t.Errorf("llm consumer config = %+v", llm.Config)
	}
	for name, s := range map[string]jetstream.Stream{
		"jobs": second.Jobs, "llm results": second.Results[messages.PoolLLM], "sandbox results": second.Results[messages.PoolSandbox],
		"llm": second.Stages[messages.PoolLLM], "sandbox": second.Stages[messages.PoolSandbox],
	} {
		c := s.CachedInfo().Config
		if c.Retention != jetstream.WorkQueuePolicy || c.Duplicates != bus.DefaultDuplicateWindow {
			t.Errorf("%s stream: retention %v, duplicate window %s; want work queue, %s", name, c.Retention, c.Duplicates, bus.DefaultDuplicateWindow)
		}
	}
	ev := second.Events.CachedInfo().Config
	if ev.Retention != jetstream.LimitsPolicy || ev.MaxAge != 24*time.Hour || ev.MaxMsgsPerSubject != bus.DefaultEventsPerJob {
		t.Errorf("events stream config = %+v", ev)
	}
	st, err := second.JobState.Status(ctx)
	if err != nil || st.History() != 1 {
		t.Errorf("job state bucket: history %d, err %v; want 1", st.History(), err)
	}

	// A changed setting is applied in place.
	cfg.AckWait = 20 * time.Second
	third, err := bus.Provision(ctx, js, cfg)
	if err != nil {
		t.Fatalf("Provision with a new AckWait: %v", err)
	}
	for _, pool := range messages.Pools() {
		if got := third.ResultConsumers[pool].CachedInfo().Config.AckWait; got != 20*time.Second {
			t.Errorf("coordinator AckWait on the %s results after update = %s, want 20s", pool, got)
		}
	}

	opened, err := bus.Open(ctx, js)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if opened.StageConsumers[messages.PoolSandbox].CachedInfo().Name != "sandbox-workers" || opened.Samples == nil || opened.Outputs == nil {
		t.Errorf("Open returned incomplete resources: %+v", opened)
	}
}

// TestProvisionRetiresTheSharedResultsStream: the one results stream of
// older versions overlaps the per-pool ones. Empty, Provision deletes it;
// holding results, Provision refuses and leaves it as it was.
func TestProvisionRetiresTheSharedResultsStream(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	legacy := jetstream.StreamConfig{Name: "AUTOCODER_RESULTS", Subjects: []string{bus.SubjectResultsAll},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.MemoryStorage}

	_, js := newBus(t)
	if _, err := js.CreateStream(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	res, err := bus.Provision(ctx, js, bus.ProvisionConfig{MemoryStorage: true})
	if err != nil {
		t.Fatalf("Provision over an empty old results stream: %v", err)
	}
	if _, err := js.Stream(ctx, legacy.Name); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the empty old results stream: %v, want deleted", err)
	}
	if len(res.Results) != 2 || len(res.ResultConsumers) != 2 {
		t.Errorf("result streams %v, consumers %v; want one per pool", res.Results, res.ResultConsumers)
	}

	_, js = newBus(t)
	if _, err := js.CreateStream(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, bus.ResultSubject(messages.PoolSandbox, "job1"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	_, err = bus.Provision(ctx, js, bus.ProvisionConfig{MemoryStorage: true})
	if !errors.Is(err, bus.ErrLegacyResults) || !strings.Contains(err.Error(), "nats stream rm AUTOCODER_RESULTS") {
		t.Fatalf("Provision over an old results stream holding a result: %v, want ErrLegacyResults saying what to do", err)
	}
	s, err := js.Stream(ctx, legacy.Name)
	if err != nil {
		t.Fatalf("the old results stream after a refused Provision: %v", err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("the old results stream holds %d results after a refused Provision, want 1", n)
	}
}

func TestProvisionRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	for _, cfg := range []bus.ProvisionConfig{{Replicas: 7}, {MaxDeliver: -2}, {AckWait: -time.Second}} {
		if _, err := bus.Provision(ctxT(t), js, cfg); err == nil {
			t.Errorf("Provision(%+v) succeeded", cfg)
		}
	}
}

// configs collects the configuration of everything provisioned.
func configs(t *testing.T, r *bus.Resources) map[string]any {
	t.Helper()
	ctx := ctxT(t)
	out := map[string]any{}
	streams := map[string]jetstream.Stream{"jobs": r.Jobs, "events": r.Events}
	for pool, s := range r.Stages {
		streams[string(pool)] = s
	}
	for pool, s := range r.Results {
		streams[string(pool)+" results"] = s
	}
	for name, s := range streams {
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatalf("stream info %s: %v", name, err)
		}
		out["stream "+name] = info.Config
	}
	consumers := map[string]jetstream.Consumer{"jobs": r.JobsConsumer}
	for pool, c := range r.StageConsumers {
		consumers[string(pool)] = c
	}
	for pool, c := range r.ResultConsumers {
		consumers[string(pool)+" results"] = c
	}
	for name, c := range consumers {
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatalf("consumer info %s: %v", name, err)
		}
		out["consumer "+name] = info.Config
	}
	for name, kv := range map[string]jetstream.KeyValue{"state": r.JobState, "results": r.JobResults} {
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatalf("kv status %s: %v", name, err)
		}
		out["kv "+name] = st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
	}
	return out
}

// TestEventsFlushAsynchronously: on one node with file storage the events
// stream, and only it, is made with asynchronous flushing (sync.go); an
// events stream made before keeps its mode; memory storage gets the
// default; and one made asynchronous is not replicated, with a clear error.
func TestEventsFlushAsynchronously(t *testing.T) {
	t.Parallel()
	_, js := newBus(t)
	ctx := ctxT(t)
	res, err := bus.Provision(ctx, js, bus.ProvisionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Events.CachedInfo().Config.PersistMode; got != jetstream.AsyncPersistMode {
		t.Errorf("events stream persist mode %v, want async", got)
	}
	for name, s := range map[string]jetstream.Stream{"jobs": res.Jobs, "llm stages": res.Stages[messages.PoolLLM],
		"llm results": res.Results[messages.PoolLLM], "dead letters": res.DLQ} {
		if got := s.CachedInfo().Config.PersistMode; got != jetstream.DefaultPersistMode {
			t.Errorf("%s stream persist mode %v, want the default", name, got)
		}
	}
	if _, err := bus.Provision(ctx, js, bus.ProvisionConfig{StoreReplicas: map[string]int{bus.StreamEvents: 3}}); err == nil ||
		!strings.Contains(err.Error(), "nats stream rm "+bus.StreamEvents) {
		t.Errorf("replicating the asynchronous events stream: err = %v, want what to do", err)
	}

	// An events stream an older autocoder made keeps its mode.
	cfg := res.Events.CachedInfo().Config
	if err := js.DeleteStream(ctx, bus.StreamEvents); err != nil {
		t.Fatal(err)
	}
	cfg.PersistMode = jetstream.DefaultPersistMode
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if res, err = bus.Provision(ctx, js, bus.ProvisionConfig{}); err != nil {
		t.Fatalf("Provision over an events stream flushed on every write: %v", err)
	}
	if got := res.Events.CachedInfo().Config.PersistMode; got != jetstream.DefaultPersistMode {
		t.Errorf("an existing events stream's persist mode became %v", got)
	}

	_, mjs := newBus(t)
	mres, err := bus.Provision(ctx, mjs, bus.ProvisionConfig{MemoryStorage: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := mres.Events.CachedInfo().Config.PersistMode; got != jetstream.DefaultPersistMode {
		t.Errorf("events stream in memory: persist mode %v, want the default", got)
	}
}
