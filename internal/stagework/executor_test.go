package stagework_test

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
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testTimeout = 30 * time.Second

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// handler is a fake stage handler: it counts calls and answers with fn.
type handler struct {
	version string
	calls   atomic.Int32
	fn      func(ctx context.Context, cmd *messages.StageCommand) (stagework.Output[any], error)
}

// mux has h as the handler of every stage, its version a dependency.
func (h *handler) mux() *stagework.Mux {
	m := stagework.NewMux(messages.DefaultStages())
	for _, s := range messages.DefaultStages().Stages() {
		stagework.Register(m, s, h.handle, stagework.DependsOn("test", h.version))
	}
	return m
}

func (h *handler) handle(ctx context.Context, cmd *messages.StageCommand, _ json.RawMessage) (stagework.Output[any], error) {
	h.calls.Add(1)
	if h.fn == nil {
		return planOutput("computed"), nil
	}
	return h.fn(ctx, cmd)
}

func planOutput(desc string) stagework.Output[any] {
	return stagework.Output[any]{Value: messages.Plan{Description: desc, Approach: "a"},
		Usage:    messages.Usage{InputTokens: 10, OutputTokens: 5, Calls: 1},
		Messages: []messages.ChatMessage{{Role: "user", Content: "plan it"}, {Role: "assistant", Content: desc}}}
}

// published is one PublishJSON call.
type published struct {
	Subject string
	MsgID   string
	Result  messages.StageResult
}

// publisher records results; it fails while fails > 0.
type publisher struct {
	mu    sync.Mutex
	got   []published
	fails atomic.Int32
}

func (p *publisher) PublishJSON(_ context.Context, subject string, v any, msgID string) error {
	if p.fails.Add(-1) >= 0 {
		return errors.New("injected publish failure")
	}
	r, ok := v.(*messages.StageResult)
	if !ok {
		return fmt.Errorf("publisher: unexpected %T", v)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, published{subject, msgID, *r})
	return nil
}

func (p *publisher) results() []published {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]published(nil), p.got...)
}

// memCache is an in-memory cache.Cache that counts calls and can fail.
type memCache struct {
	mu     sync.Mutex
	m      map[string][]byte
	gets   int
	sets   int
	getErr error
	setErr error
}

var _ cache.Cache = (*memCache)(nil)

func newMemCache() *memCache { return &memCache{m: map[string][]byte{}} }

func (c *memCache) Get(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	if c.getErr != nil {
		return nil, c.getErr
	}
	v, ok := c.m[key]
	if !ok {
		return nil, cache.ErrMiss
	}
	return v, nil
}

func (c *memCache) Set(_ context.Context, key string, v []byte, _ time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets++
	if c.setErr != nil {
		return c.setErr
	}
	c.m[key] = append([]byte(nil), v...)
	return nil
}

func (c *memCache) Delete(context.Context, string) error { return nil }
func (c *memCache) TryLock(context.Context, string, time.Duration) (string, error) {
	return "t", nil
}
func (c *memCache) Unlock(context.Context, string, string) error { return nil }
func (c *memCache) Close() error                                 { return nil }

func (c *memCache) stats() (gets, sets int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets, c.sets
}

func command(mode messages.CacheMode) *messages.StageCommand {
	return &messages.StageCommand{V: messages.WireVersion, JobID: "job-1", Seq: 3, Stage: messages.StagePlan,
		Iteration: 0, Model: "m", Cache: mode, Input: json.RawMessage(`{"task":{"prompt":"p"}}`)}
}

func message(t *testing.T, cmd *messages.StageCommand, numDelivered uint64) *bus.Message {
	t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return bus.NewMessage(bus.StageSubject(messages.DefaultStages().Pool(cmd.Stage), cmd.Stage), b, nil, numDelivered)
}

func newExecutor(t *testing.T, h *handler, p stagework.Publisher, c cache.Cache, mod func(*stagework.Config)) *stagework.Executor {
	t.Helper()
	cfg := stagework.Config{Mux: h.mux(), Publisher: p, Worker: "w1", Now: func() time.Time { return t0 },
		Pool: messages.PoolLLM, Jobs: pendingAs{messages.StagePlan}}
	cfg.Cache = c
	if mod != nil {
		mod(&cfg)
	}
	r, err := stagework.NewExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pendingAs is a Jobs that has every job's every seq pending as one stage
// (the stage of command()): the executor's own behaviour, admission apart.
type pendingAs struct{ stage messages.Stage }

func (p pendingAs) PendingStage(context.Context, string, int) (messages.Stage, stagework.JobStatus, error) {
	return p.stage, stagework.JobRunning, nil
}

func TestCacheModes(t *testing.T) {
	t.Parallel()
	stale := mustJSON(t, map[string]any{"output": messages.Plan{Description: "from cache", Approach: "a"},
		"messages": []messages.ChatMessage{{Role: "assistant", Content: "from cache"}}})
	tests := []struct {
		name      string
		mode      messages.CacheMode
		prefilled bool
		wantCalls int32
		wantGets  int
		wantSets  int
		wantDesc  string
		wantHit   bool
	}{
		{"auto hit: answered from the cache", messages.CacheAuto, true, 0, 1, 0, "from cache", true},
		{"empty mode is auto", "", true, 0, 1, 0, "from cache", true},
		{"auto miss: computed and stored (read again once the claim is taken)", messages.CacheAuto, false, 1, 2, 1, "computed", false},
		{"override: recomputed and stored", messages.CacheOverride, true, 1, 0, 1, "computed", false},
		{"disable: neither read nor written", messages.CacheDisable, true, 1, 0, 0, "computed", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, p, c := &handler{version: "v1"}, &publisher{}, newMemCache()
			r := newExecutor(t, h, p, c, nil)
			cmd := command(tc.mode)
			key := mustKey(t, r, cmd)
			if tc.prefilled {
				c.m[key] = stale
			}
			if err := r.Handle(ctxT(t), message(t, cmd, 1)); err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if got := h.calls.Load(); got != tc.wantCalls {
				t.Errorf("handler calls = %d, want %d", got, tc.wantCalls)
			}
			gets, sets := c.stats()
			if gets != tc.wantGets || sets != tc.wantSets {
				t.Errorf("cache gets/sets = %d/%d, want %d/%d", gets, sets, tc.wantGets, tc.wantSets)
			}
			res := p.results()
			if len(res) != 1 {
				t.Fatalf("published %d results, want 1", len(res))
			}
			got := res[0]
			if got.Subject != bus.ResultSubject(messages.PoolLLM, "job-1") || got.MsgID != bus.ResultMsgID(messages.PoolLLM, "job-1", 3) {
				t.Errorf("published to %s with id %s", got.Subject, got.MsgID)
			}
			var plan messages.Plan
			if err := json.Unmarshal(got.Result.Output, &plan); err != nil {
				t.Fatal(err)
			}
			if plan.Description != tc.wantDesc || got.Result.Cached != tc.wantHit {
				t.Errorf("result: %q cached=%v, want %q cached=%v", plan.Description, got.Result.Cached, tc.wantDesc, tc.wantHit)
			}
			if tc.wantHit && got.Result.Usage != (messages.Usage{}) {
				t.Errorf("a cache hit reports usage %+v: no tokens were spent", got.Result.Usage)
			}
			if tc.wantSets > 0 {
				var stored struct {
					Output messages.Plan `json:"output"`
				}
				if err := json.Unmarshal(c.m[key], &stored); err != nil || stored.Output.Description != "computed" {
					t.Errorf("cache holds %s (err %v), want the computed output", c.m[key], err)
				}
			}
		})
	}
}

// TestCachedResultAcrossJobs: the key is the content of the command, not
// its job: another job asking the same stage with the same input is a hit.
func TestCachedResultAcrossJobs(t *testing.T) {
	t.Parallel()
	h, p, c := &handler{version: "v1"}, &publisher{}, newMemCache()
	r := newExecutor(t, h, p, c, nil)
	first := command(messages.CacheAuto)
	if err := r.Handle(ctxT(t), message(t, first, 1)); err != nil {
		t.Fatal(err)
	}
	second := *first
	second.JobID, second.Seq, second.Iteration = "job-2", 7, 2
	if err := r.Handle(ctxT(t), message(t, &second, 1)); err != nil {
		t.Fatal(err)
	}
	res := p.results()
	if h.calls.Load() != 1 || len(res) != 2 || !res[1].Result.Cached || res[1].Result.JobID != "job-2" || res[1].Result.Seq != 7 {
		t.Errorf("calls %d, results %+v: want the second job answered from the cache under its own id and seq", h.calls.Load(), res)
	}
	if diff := cmp.Diff(res[0].Result.Messages, res[1].Result.Messages); diff != "" {
		t.Errorf("a hit lost the conversation (-computed +cached):\n%s", diff)
	}
}

func TestCacheKey(t *testing.T) {
	t.Parallel()
	r := newExecutor(t, &handler{version: "v1"}, &publisher{}, nil, nil)
	base := command(messages.CacheAuto)
	key := mustKey(t, r, base)
	same := *base
	same.JobID, same.Seq, same.Iteration, same.Cache = "other", 9, 4, messages.CacheOverride
	if mustKey(t, r, &same) != key {
		t.Error("the key depends on the job, seq, iteration or cache mode")
	}
	for name, mod := range map[string]func(*messages.StageCommand){
		"stage": func(c *messages.StageCommand) { c.Stage = messages.StageTests },
		"model": func(c *messages.StageCommand) { c.Model = "m2" },
		"input": func(c *messages.StageCommand) { c.Input = json.RawMessage(`{"task":{"prompt":"q"}}`) },
		"settings": func(c *messages.StageCommand) {
			temp := 0.2
			c.Settings = &messages.StageSettings{Temperature: &temp}
		},
		"env_vars": func(c *messages.StageCommand) {
			c.Settings = &messages.StageSettings{EnvVars: map[string]string{"A": "1"}}
		},
	} {
		c := *base
		mod(&c)
		if mustKey(t, r, &c) == key {
			t.Errorf("changing the %s keeps the key", name)
		}
	}
	r2 := newExecutor(t, &handler{version: "v2"}, &publisher{}, nil, nil)
	if mustKey(t, r2, base) == key {
		t.Error("a new handler version keeps the key")
	}
}

func TestCorruptCacheEntryIsRecomputed(t *testing.T) {
	t.Parallel()
	h, p, c := &handler{version: "v1"}, &publisher{}, newMemCache()
	r := newExecutor(t, h, p, c, nil)
	cmd := command(messages.CacheAuto)
	c.m[mustKey(t, r, cmd)] = []byte(`{"output":`)
	if err := r.Handle(ctxT(t), message(t, cmd, 1)); err != nil {
		t.Fatal(err)
	}
	if h.calls.Load() != 1 || p.results()[0].Result.Cached {
		t.Errorf("a corrupt entry was served: calls %d", h.calls.Load())
	}
}

func TestPermanentErrorIsAResult(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{}, bus.Permanent(errors.New("the model refused"))
	}}
	p, c := &publisher{}, newMemCache()
	r := newExecutor(t, h, p, c, nil)
	// Even on the first delivery: retrying cannot help.
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
		t.Fatalf("Handle = %v, want nil (the failure is reported as a result)", err)
	}
	want := []published{{Subject: bus.ResultSubject(messages.PoolLLM, "job-1"), MsgID: bus.ResultMsgID(messages.PoolLLM, "job-1", 3), Result: messages.StageResult{
		V: messages.WireVersion, JobID: "job-1", Seq: 3, Stage: messages.StagePlan, Error: "the model refused",
		ErrorKind: messages.ErrorPermanent, StartedAt: t0, Worker: "w1"}}}
	if diff := cmp.Diff(want, p.results()); diff != "" {
		t.Errorf("published (-want +got):\n%s", diff)
	}
	if h.calls.Load() != 1 {
		t.Errorf("handler calls = %d", h.calls.Load())
	}
	if _, sets := c.stats(); sets != 0 {
		t.Error("a failure was cached")
	}
}

// TestTransientErrorRetriedThenInfra: a transient error goes back to the bus
// (no result) until the consumer's last delivery (MaxDeliver), then becomes
// an infra error result so the job ends with a reason.
func TestTransientErrorRetriedThenInfra(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{}, errors.New("model endpoint down")
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, newMemCache(), nil)
	cmd := command(messages.CacheAuto)
	for n := uint64(1); n < 3; n++ {
		err := r.Handle(ctxT(t), message(t, cmd, n).WithMaxDeliver(3))
		if err == nil || bus.IsPermanent(err) {
			t.Fatalf("delivery %d: Handle = %v, want a retryable error", n, err)
		}
		if len(p.results()) != 0 {
			t.Fatalf("delivery %d published a result", n)
		}
	}
	if err := r.Handle(ctxT(t), message(t, cmd, 3).WithMaxDeliver(3)); err != nil {
		t.Fatalf("last attempt: Handle = %v, want nil", err)
	}
	res := p.results()
	if len(res) != 1 || res[0].Result.ErrorKind != messages.ErrorInfra || res[0].Result.Error != "model endpoint down (after 3 attempts)" {
		t.Errorf("published %+v, want one infra error result", res)
	}
}

// TestLastDeliveryBecomesInfra runs the executor in a real bus.Worker on a
// consumer with MaxDeliver 2: on the consumer's last delivery the failure
// is published as an infra error instead of the message silently dying.
func TestLastDeliveryBecomesInfra(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true, MaxDeliver: 2})
	res, pub := be.Resources, be.Publisher
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{}, errors.New("sandbox backend broken")
	}}
	r := newExecutor(t, h, pub, nil, func(c *stagework.Config) { c.RetryDelay = func(uint64) time.Duration { return time.Millisecond } })
	w := bus.NewWorker(res.StageConsumers[messages.PoolLLM], r, bus.WorkerConfig{
		RetryDelay: func(uint64) time.Duration { return time.Millisecond }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})

	cmd := command(messages.CacheAuto)
	if err := pub.PublishJSON(ctxT(t), bus.StageSubject(messages.DefaultStages().Pool(cmd.Stage), cmd.Stage), cmd, bus.StageMsgID(cmd.JobID, cmd.Seq)); err != nil {
		t.Fatal(err)
	}
	msg, err := res.ResultConsumers[messages.PoolLLM].Next(jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatalf("no result: %v", err)
	}
	var got messages.StageResult
	if err := json.Unmarshal(msg.Data(), &got); err != nil {
		t.Fatal(err)
	}
	if got.ErrorKind != messages.ErrorInfra || got.Error != "sandbox backend broken (after 2 attempts)" || got.Seq != 3 {
		t.Errorf("result %+v, want an infra error after 2 attempts", got)
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2 (MaxDeliver)", n)
	}
}

// TestBrokenCacheStillDoesTheWork: a cache that fails costs money, not
// correctness: the stage is computed and its result published.
func TestBrokenCacheStillDoesTheWork(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cache func(t *testing.T) cache.Cache
	}{
		{"Get and Set fail", func(*testing.T) cache.Cache {
			c := newMemCache()
			c.getErr, c.setErr = errors.New("cache: connection refused"), errors.New("cache: connection refused")
			return c
		}},
		{"Get fails, Set works", func(*testing.T) cache.Cache {
			c := newMemCache()
			c.getErr = errors.New("cache: timeout")
			return c
		}},
		{"redis stopped", func(t *testing.T) cache.Cache {
			srv := testredis.StartServer(t)
			rc, err := cache.OpenRedis(ctxT(t), srv.URL()+"?dial_timeout=200ms&max_retries=-1")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rc.Close() })
			srv.Stop()
			return rc
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, p := &handler{version: "v1"}, &publisher{}
			r := newExecutor(t, h, p, tc.cache(t), nil)
			if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
				t.Fatalf("Handle = %v, want nil", err)
			}
			res := p.results()
			if h.calls.Load() != 1 || len(res) != 1 || res[0].Result.Error != "" || res[0].Result.Cached {
				t.Errorf("calls %d, results %+v: want one computed result", h.calls.Load(), res)
			}
		})
	}
}

func TestBadCommandIsPermanent(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"not json":         `{"v":1,`,
		"newer version":    fmt.Sprintf(`{"v":%d,"job_id":"j","seq":1,"stage":"plan","input":{}}`, messages.WireVersion+1),
		"invalid job id":   `{"v":1,"job_id":"a.*","seq":1,"stage":"plan","input":{}}`,
		"missing job id":   `{"v":1,"seq":1,"stage":"plan","input":{}}`,
		"wrong field type": `{"v":1,"job_id":"j","seq":"one","stage":"plan"}`,
	}
	for name, raw := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, p := &handler{version: "v1"}, &publisher{}
			r := newExecutor(t, h, p, nil, nil)
			err := r.Handle(ctxT(t), bus.NewMessage("autocoder.stage.llm.plan", []byte(raw), nil, 1))
			if !bus.IsPermanent(err) {
				t.Errorf("Handle = %v, want a permanent error", err)
			}
			if h.calls.Load() != 0 || len(p.results()) != 0 {
				t.Error("a bad command reached the handler or published a result")
			}
		})
	}
}

// TestPublishFailureRetriedFromCache: the work is done but its result is not
// out, after every attempt of its delivery; the redelivery is answered from
// the cache, not computed again.
func TestPublishFailureRetriedFromCache(t *testing.T) {
	t.Parallel()
	h, p, c := &handler{version: "v1"}, &publisher{}, newMemCache()
	p.fails.Store(int32(1 + stagework.PublishRetries))
	r := newExecutor(t, h, p, c, nil)
	cmd := command(messages.CacheAuto)
	if err := r.Handle(ctxT(t), message(t, cmd, 1)); err == nil || bus.IsPermanent(err) {
		t.Fatalf("Handle = %v, want a retryable error", err)
	}
	if err := r.Handle(ctxT(t), message(t, cmd, 2)); err != nil {
		t.Fatal(err)
	}
	res := p.results()
	if h.calls.Load() != 1 || len(res) != 1 || !res[0].Result.Cached {
		t.Errorf("calls %d, results %+v: want the redelivery served from the cache", h.calls.Load(), res)
	}
}

// TestPublishFailureRetriedInTheDelivery: a result whose publish fails
// once is published again within the same delivery, so a stage the cache
// cannot answer again (cache mode override, or a failed result) is not run
// a second time by a redelivery.
func TestPublishFailureRetriedInTheDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode messages.CacheMode
		fail bool
	}{
		{"override", messages.CacheOverride, false},
		{"a failed result", messages.CacheAuto, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, p := &handler{version: "v1"}, &publisher{}
			if tc.fail {
				h.fn = func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
					return stagework.Output[any]{}, bus.Permanent(errors.New("the model refused"))
				}
			}
			p.fails.Store(1)
			r := newExecutor(t, h, p, newMemCache(), nil)
			if err := r.Handle(ctxT(t), message(t, command(tc.mode), 1)); err != nil {
				t.Fatalf("Handle = %v, want the result published on a second attempt", err)
			}
			if n, res := h.calls.Load(), p.results(); n != 1 || len(res) != 1 {
				t.Errorf("%d handler calls, %d results: want one of each", n, len(res))
			}
		})
	}
}

// TestShutdownLeavesTheMessage: a handler cut off by shutdown publishes
// nothing, even on what would be its last attempt: another worker takes it.
func TestShutdownLeavesTheMessage(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	h := &handler{version: "v1", fn: func(ctx context.Context, _ *messages.StageCommand) (stagework.Output[any], error) {
		close(started)
		<-ctx.Done()
		return stagework.Output[any]{}, ctx.Err()
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Handle(ctx, message(t, command(messages.CacheAuto), 1).WithMaxDeliver(1)) }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Handle = %v, want context.Canceled", err)
	}
	if len(p.results()) != 0 {
		t.Error("a cancelled stage published a result")
	}
}

func TestUnmarshalableOutputIsPermanent(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{Value: map[string]any{"c": make(chan int)}}, nil
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, newMemCache(), nil)
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
		t.Fatal(err)
	}
	res := p.results()
	if len(res) != 1 || res[0].Result.ErrorKind != messages.ErrorPermanent || !strings.Contains(res[0].Result.Error, "marshal output") {
		t.Errorf("published %+v, want a permanent marshal error", res)
	}
}

func TestLongMessagesAreTrimmed(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", stagework.MaxMessageBytes) + strings.Repeat("z", stagework.MaxMessageBytes)
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		o := planOutput("d")
		o.Messages = []messages.ChatMessage{{Role: "assistant", Content: long}, {Role: "user", Content: "short"}}
		return o, nil
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, nil, nil)
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
		t.Fatal(err)
	}
	ms := p.results()[0].Result.Messages
	if len(ms[0].Content) > stagework.MaxMessageBytes+64 || !strings.HasPrefix(ms[0].Content, "aaa") ||
		!strings.HasSuffix(ms[0].Content, "zzz") || !strings.Contains(ms[0].Content, "bytes trimmed]") {
		t.Errorf("long message kept %d bytes; want head and tail within %d", len(ms[0].Content), stagework.MaxMessageBytes)
	}
	if ms[1].Content != "short" {
		t.Errorf("short message changed to %q", ms[1].Content)
	}
}

// TestTrimmedMessagesStayUTF8: a long message of multi-byte characters
// is cut between characters, never through one.
func TestTrimmedMessagesStayUTF8(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"é", "€", "𝄞", "a€"} { // 2, 3 and 4 bytes, and odd offsets
		long := strings.Repeat(text, 2*stagework.MaxMessageBytes/len(text)+1)
		h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
			o := planOutput("d")
			o.Messages = []messages.ChatMessage{{Role: "assistant", Content: long}}
			return o, nil
		}}
		p := &publisher{}
		if err := newExecutor(t, h, p, nil, nil).Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
			t.Fatal(err)
		}
		got := p.results()[0].Result.Messages[0].Content
		if !utf8.ValidString(got) || len(got) >= len(long) || len(got) > stagework.MaxMessageBytes+64 {
			t.Errorf("%q repeated: kept %d bytes, valid UTF-8 %v", text, len(got), utf8.ValidString(got))
		}
	}
}

// doneCall is one Metrics.StageDone call.
type doneCall struct {
	Stage  messages.Stage
	Cached bool
	Failed bool
	D      time.Duration
}

// recordedDone records StageDone calls.
type recordedDone struct{ calls []doneCall }

func (r *recordedDone) StageDone(s messages.Stage, cached, failed bool, d time.Duration) {
	r.calls = append(r.calls, doneCall{s, cached, failed, d})
}
func (r *recordedDone) CommandRefused(messages.Stage, string) {}

func TestMetricsStageDone(t *testing.T) {
	t.Parallel()
	clock := t0
	rec := &recordedDone{}
	h, p, c := &handler{version: "v1"}, &publisher{}, newMemCache()
	r := newExecutor(t, h, p, c, func(cfg *stagework.Config) {
		cfg.Now = func() time.Time { clock = clock.Add(250 * time.Millisecond); return clock }
		cfg.Metrics = rec
	})
	for range 2 {
		if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1)); err != nil {
			t.Fatal(err)
		}
	}
	d := 250 * time.Millisecond // on the injected clock
	want := []doneCall{{messages.StagePlan, false, false, d}, {messages.StagePlan, true, false, d}}
	if diff := cmp.Diff(want, rec.calls); diff != "" {
		t.Errorf("StageDone calls (-want +got):\n%s", diff)
	}
	for _, got := range p.results() {
		if got.Result.DurationMS != 250 {
			t.Errorf("duration_ms = %d, want 250", got.Result.DurationMS)
		}
	}
}

func TestNewExecutorValidates(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]stagework.Config{
		"no mux":       {Publisher: &publisher{}, Pool: messages.PoolLLM, Jobs: pendingAs{}},
		"no publisher": {Mux: (&handler{}).mux(), Pool: messages.PoolLLM, Jobs: pendingAs{}},
		"no jobs":      {Mux: (&handler{}).mux(), Publisher: &publisher{}, Pool: messages.PoolLLM},
		"no pool":      {Mux: (&handler{}).mux(), Publisher: &publisher{}, Jobs: pendingAs{}},
		"unknown pool": {Mux: (&handler{}).mux(), Publisher: &publisher{}, Jobs: pendingAs{}, Pool: "gpu"},
	} {
		if _, err := stagework.NewExecutor(cfg); err == nil {
			t.Errorf("%s: NewExecutor accepted it", name)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBusPermanentIsAResult: a handler that marks its error with the bus's
// Permanent instead of stagework's still gets a failed result published,
// at once, and the executor returns nil so the worker acks instead of
// terminating the command with no result (the job would wait forever).
func TestBusPermanentIsAResult(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{}, fmt.Errorf("stage: %w", bus.Permanent(errors.New("input is unusable")))
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, newMemCache(), nil)
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1).WithMaxDeliver(5)); err != nil {
		t.Fatalf("Handle = %v, want nil (the failure is reported as a result)", err)
	}
	res := p.results()
	if len(res) != 1 || res[0].Result.ErrorKind != messages.ErrorPermanent || !strings.Contains(res[0].Result.Error, "input is unusable") {
		t.Errorf("published %+v, want one permanent error result", res)
	}
}

// TestBusPermanentInAWorker runs the same handler in a real bus.Worker: the
// result reaches the results stream and the command is acked, not left
// for redelivery.
func TestBusPermanentInAWorker(t *testing.T) {
	t.Parallel()
	be := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true})
	res, pub := be.Resources, be.Publisher
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{}, bus.Permanent(errors.New("refused"))
	}}
	r := newExecutor(t, h, pub, nil, nil)
	w := bus.NewWorker(res.StageConsumers[messages.PoolLLM], r, bus.WorkerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	cmd := command(messages.CacheAuto)
	if err := pub.PublishJSON(ctxT(t), bus.StageSubject(messages.DefaultStages().Pool(cmd.Stage), cmd.Stage), cmd, bus.StageMsgID(cmd.JobID, cmd.Seq)); err != nil {
		t.Fatal(err)
	}
	msg, err := res.ResultConsumers[messages.PoolLLM].Next(jetstream.FetchMaxWait(testTimeout))
	if err != nil {
		t.Fatalf("no result: %v", err)
	}
	var got messages.StageResult
	if err := json.Unmarshal(msg.Data(), &got); err != nil {
		t.Fatal(err)
	}
	if got.ErrorKind != messages.ErrorPermanent || !strings.Contains(got.Error, "refused") || got.Seq != 3 {
		t.Errorf("result %+v, want a permanent error", got)
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// TestRetryDelay: a retried failure goes back with the executor's backoff
// for its delivery count, or with the delay the handler asked for.
func TestRetryDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"backoff", errors.New("down"), 3 * time.Second},
		{"asked", bus.RetryAfter(errors.New("rate limited"), time.Minute), time.Minute},
	}
	for _, tc := range tests {
		h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
			return stagework.Output[any]{}, tc.err
		}}
		r := newExecutor(t, h, &publisher{}, nil, func(c *stagework.Config) {
			c.RetryDelay = func(n uint64) time.Duration { return time.Duration(n) * time.Second }
		})
		err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 3).WithMaxDeliver(5))
		if d, ok := bus.RetryDelayOf(err); !ok || d != tc.want || bus.IsPermanent(err) {
			t.Errorf("%s: Handle = %v (delay %s, %v), want a retry after %s", tc.name, err, d, ok, tc.want)
		}
	}
}

// TestPanicIsRetriedThenInfra: a handler's panic is retried like any error
// and, on the last delivery, published as an infra error.
func TestPanicIsRetriedThenInfra(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		panic("index out of range")
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, nil, nil)
	var pe *bus.PanicError
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 1).WithMaxDeliver(2)); !errors.As(err, &pe) || bus.IsPermanent(err) {
		t.Fatalf("first delivery: Handle = %v, want a retryable panic error", err)
	}
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), 2).WithMaxDeliver(2)); err != nil {
		t.Fatalf("last delivery: Handle = %v, want nil", err)
	}
	res := p.results()
	if len(res) != 1 || res[0].Result.ErrorKind != messages.ErrorInfra || !strings.Contains(res[0].Result.Error, "index out of range") {
		t.Errorf("published %+v, want one infra error naming the panic", res)
	}
}

// TestUnknownMaxDeliverUsesTheDefault: a message whose consumer's
// MaxDeliver is unknown gets the provisioning default, and one from a
// consumer without a limit is retried on.
func TestUnknownMaxDeliverUsesTheDefault(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{}, errors.New("down")
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, nil, nil)
	n := uint64(bus.DefaultMaxDeliver)
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), n).WithMaxDeliver(-1)); err == nil {
		t.Error("no limit: the failure was not retried")
	}
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), n-1)); err == nil {
		t.Error("unknown limit: given up before the default")
	}
	if err := r.Handle(ctxT(t), message(t, command(messages.CacheAuto), n)); err != nil {
		t.Errorf("unknown limit: Handle = %v on delivery %d, want an infra result", err, n)
	}
	if res := p.results(); len(res) != 1 || res[0].Result.ErrorKind != messages.ErrorInfra {
		t.Errorf("published %+v, want one infra result", res)
	}
}

// TestShutdownWrapsTheCancellation: a handler cut off by shutdown that
// returns an error of its own still goes back as a cancellation, so the
// worker hands the message back instead of terminating it on a last delivery.
func TestShutdownWrapsTheCancellation(t *testing.T) {
	t.Parallel()
	h := &handler{version: "v1", fn: func(context.Context, *messages.StageCommand) (stagework.Output[any], error) {
		return stagework.Output[any]{}, errors.New("sandbox run interrupted")
	}}
	p := &publisher{}
	r := newExecutor(t, h, p, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.Handle(ctx, message(t, command(messages.CacheAuto), 1).WithMaxDeliver(1))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "sandbox run interrupted") {
		t.Errorf("Handle = %v, want the handler's error wrapping context.Canceled", err)
	}
	if len(p.results()) != 0 {
		t.Error("a cancelled stage published a result")
	}
}

// mustKey is x's cache key of cmd.
func mustKey(t *testing.T, x *stagework.Executor, cmd *messages.StageCommand) string {
	t.Helper()
	k, err := x.Key(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestAnnounceLongStages: a stage the executor computes is announced once,
// with the worker's name and its start, when it has run AnnounceAfter; a
// stage answered from the cache is not (it goes from queued to finished).
func TestAnnounceLongStages(t *testing.T) {
	t.Parallel()
	announced := make(chan messages.StageStarted, 4)
	h := &handler{version: "v1"}
	h.fn = func(_ context.Context, cmd *messages.StageCommand) (stagework.Output[any], error) {
		if cmd.JobID == "job-long" {
			select { // runs until it has been announced
			case n := <-announced:
				announced <- n
			case <-time.After(testTimeout):
				t.Error("a long stage was not announced")
			}
		}
		return planOutput("computed " + cmd.JobID), nil
	}
	announce := func(c *stagework.Config) {
		c.Announce = func(_ context.Context, n messages.StageStarted) { announced <- n }
		c.AnnounceAfter = 20 * time.Millisecond
	}
	r := newExecutor(t, h, &publisher{}, newMemCache(), announce)
	for _, jobID := range []string{"job-long", "job-hit"} { // the second is answered from the cache
		cmd := *command(messages.CacheAuto)
		cmd.JobID = jobID
		if err := r.Handle(ctxT(t), message(t, &cmd, 1)); err != nil {
			t.Fatal(err)
		}
	}
	want := messages.StageStarted{V: messages.WireVersion, JobID: "job-long", Seq: 3, Stage: messages.StagePlan, Worker: "w1", StartedAt: t0}
	if got := <-announced; got != want {
		t.Errorf("announced %+v, want %+v", got, want)
	}
	select {
	case n := <-announced:
		t.Errorf("announced %+v too: a cache hit or a quick stage", n)
	default:
	}
}
