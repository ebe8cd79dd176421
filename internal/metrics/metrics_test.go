package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/autocoder/autocoder/internal/coordinator"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// samples gathers reg into "family{label=value,...}" -> value (counters,
// gauges, and histograms' sample counts).
func samples(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[mf.GetName()+labelString(m)] = value(m)
		}
	}
	return out
}

func labelString(m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(ls)
	return "{" + strings.Join(ls, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// TestModelObserver drives the real OpenAI client against the fake server:
// a 429, a 503, an unusable reply and a good one make one structured call.
func TestModelObserver(t *testing.T) {
	t.Parallel()
	s := fakellm.New()
	defer s.Close()
	s.On("plan", fakellm.Status(http.StatusTooManyRequests, "0"), fakellm.Status(http.StatusServiceUnavailable, ""),
		fakellm.Text("no JSON here").Usage(7, 3),
		fakellm.JSON(messages.Plan{Description: "d", Approach: "a"}).Usage(11, 5))
	reg := prometheus.NewRegistry()
	obs, err := metrics.NewModel(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.NewModel(reg); err != nil {
		t.Fatalf("a second NewModel on the same registry: %v, want the families shared", err)
	}
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: s.URL(), InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := llm.WithStage(context.Background(), "plan")
	if _, err := c.Structured(ctx, llm.StructuredRequest{Model: "m1", Schema: llm.PlanSchema,
		Messages: []messages.ChatMessage{{Role: "user", Content: "plan"}}}); err != nil {
		t.Fatal(err)
	}
	got := samples(t, reg)
	want := map[string]float64{
		metrics.ModelCallsTotal + "{model=m1,outcome=ok,stage=plan}":          2,
		metrics.ModelCallsTotal + "{model=m1,outcome=error,stage=plan}":       2,
		metrics.ModelCallSeconds + "{model=m1,stage=plan}":                    4,
		metrics.ModelTokensTotal + "{direction=input,model=m1,stage=plan}":    18,
		metrics.ModelTokensTotal + "{direction=output,model=m1,stage=plan}":   8,
		metrics.ModelErrorsTotal + "{kind=rate_limited,model=m1,stage=plan}":  1,
		metrics.ModelErrorsTotal + "{kind=server_error,model=m1,stage=plan}":  1,
		metrics.ModelErrorsTotal + "{kind=invalid_reply,model=m1,stage=plan}": 1,
		// The other kinds exist from the first call, at zero.
		metrics.ModelErrorsTotal + "{kind=client_error,model=m1,stage=plan}": 0,
		metrics.ModelErrorsTotal + "{kind=malformed,model=m1,stage=plan}":    0,
		metrics.ModelErrorsTotal + "{kind=network,model=m1,stage=plan}":      0,
		metrics.ModelErrorsTotal + "{kind=timeout,model=m1,stage=plan}":      0,
		metrics.ModelErrorsTotal + "{kind=too_large,model=m1,stage=plan}":    0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("model metrics (-want +got):\n%s", diff)
	}
}

// TestModelObserverTimeoutAndAbandon: an attempt past RequestTimeout is a
// timeout error; a call its caller abandons is no verdict on the model.
func TestModelObserverTimeoutAndAbandon(t *testing.T) {
	t.Parallel()
	s := fakellm.New()
	defer s.Close()
	s.On("plan", fakellm.JSON(messages.Plan{Description: "d", Approach: "a"}).Delay(time.Minute))
	reg := prometheus.NewRegistry()
	obs, err := metrics.NewModel(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: s.URL(), RequestTimeout: 50 * time.Millisecond, MaxRetries: -1, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	req := llm.StructuredRequest{Model: "m2", Schema: llm.PlanSchema, Messages: []messages.ChatMessage{{Role: "user", Content: "plan"}}}
	if _, err := c.Structured(llm.WithStage(context.Background(), "code"), req); err == nil {
		t.Fatal("a reply slower than RequestTimeout succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Structured(ctx, req); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	got := samples(t, reg)
	if got[metrics.ModelErrorsTotal+"{kind=timeout,model=m2,stage=code}"] != 1 || got[metrics.ModelCallsTotal+"{model=m2,outcome=error,stage=code}"] != 1 {
		t.Errorf("after one timed-out attempt: %v", got)
	}
	for k := range got {
		if strings.Contains(k, "stage=none") {
			t.Errorf("the abandoned call was counted: %s", k)
		}
	}
}

type memCache struct {
	cache.Cache // only Get is called
	hits        map[string]bool
	fail        bool
}

func (m memCache) Get(_ context.Context, key string) ([]byte, error) {
	if m.fail {
		return nil, errors.New("connection refused")
	}
	if m.hits[key] {
		return []byte("v"), nil
	}
	return nil, cache.ErrMiss
}

func TestObserveCache(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c, err := metrics.ObserveCache(memCache{hits: map[string]bool{"k": true}}, metrics.LayerRedis, reg)
	if err != nil {
		t.Fatal(err)
	}
	down, err := metrics.ObserveCache(memCache{fail: true}, metrics.LayerLocal, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"k", "k", "other"} {
		_, _ = c.Get(ctx, k)
	}
	if _, err := down.Get(ctx, "k"); err == nil || errors.Is(err, cache.ErrMiss) {
		t.Errorf("a failing cache's error changed: %v", err)
	}
	want := map[string]float64{
		metrics.CacheLookupsTotal + "{layer=redis,result=hit}":   2,
		metrics.CacheLookupsTotal + "{layer=redis,result=miss}":  1,
		metrics.CacheLookupsTotal + "{layer=local,result=error}": 1,
		// Every series exists from the start, so rates and ratios have data.
		metrics.CacheLookupsTotal + "{layer=redis,result=error}": 0,
		metrics.CacheLookupsTotal + "{layer=local,result=hit}":   0,
		metrics.CacheLookupsTotal + "{layer=local,result=miss}":  0,
	}
	if diff := cmp.Diff(want, samples(t, reg)); diff != "" {
		t.Errorf("cache lookups (-want +got):\n%s", diff)
	}
}

// scriptedBackend answers runs from a table: the Argv's first word names the result.
type scriptedBackend struct{ results map[string]sandbox.RunResult }

func (scriptedBackend) Name() string { return "scripted" }
func (scriptedBackend) Close() error { return nil }
func (scriptedBackend) Build(_ context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	if len(spec.Packages) > 0 && spec.Packages[0] == "nosuch" {
		return sandbox.Env{}, &sandbox.InvalidPackageError{Packages: spec.Packages}
	}
	return sandbox.Env{ID: "env"}, nil
}
func (b scriptedBackend) Run(_ context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	r, ok := b.results[spec.Argv[0]]
	if !ok {
		return r, fmt.Errorf("engine down")
	}
	return r, nil
}

func TestObserveBackend(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b, err := metrics.ObserveBackend(scriptedBackend{results: map[string]sandbox.RunResult{
		"pass": {}, "fail": {ExitCode: 1}, "slow": {TimedOut: true, ExitCode: 137}, "hog": {ExitCode: 137},
		"chatty": {Truncated: true}}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, argv0 := range []string{"pass", "pass", "fail", "slow", "hog", "chatty", "broken"} {
		_, _ = b.Run(ctx, sandbox.RunSpec{Argv: []string{argv0}})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = b.Run(cancelled, sandbox.RunSpec{Argv: []string{"hog"}}) // killed by a cancel: not counted
	_, _ = b.Build(ctx, sandbox.EnvSpec{Packages: []string{"pandas"}})
	_, _ = b.Build(ctx, sandbox.EnvSpec{Packages: []string{"nosuch"}})
	want := map[string]float64{
		metrics.SandboxRunsTotal + "{backend=scripted,outcome=passed}":         2,
		metrics.SandboxRunsTotal + "{backend=scripted,outcome=failed}":         1,
		metrics.SandboxRunsTotal + "{backend=scripted,outcome=timeout}":        1,
		metrics.SandboxRunsTotal + "{backend=scripted,outcome=oom}":            1,
		metrics.SandboxRunsTotal + "{backend=scripted,outcome=output_capped}":  1,
		metrics.SandboxRunsTotal + "{backend=scripted,outcome=infrastructure}": 1,
		metrics.SandboxRunSeconds + "{backend=scripted}":                       7,
		metrics.SandboxBuildsTotal + "{backend=scripted,outcome=ok}":           1,
		metrics.SandboxBuildsTotal + "{backend=scripted,outcome=failed}":       1,
		metrics.SandboxBuildsTotal + "{backend=scripted,outcome=error}":        0,
		metrics.SandboxBuildSeconds + "{backend=scripted}":                     2,
	}
	if diff := cmp.Diff(want, samples(t, reg)); diff != "" {
		t.Errorf("sandbox metrics (-want +got):\n%s", diff)
	}
}

// TestStageBucketsReachLongestStage: the last bucket of stage histograms is
// at least the longest deadline a job can give a stage (a run at the
// options.timeout ceiling plus the run slack) and the default build deadline,
// so a slow stage lands in a bucket rather than only in +Inf.
func TestStageBucketsReachLongestStage(t *testing.T) {
	t.Parallel()
	longestRun := coordinator.StageDeadline(messages.DefaultStages(), messages.StageRunTests, messages.Options{Timeout: messages.Duration(messages.MaxTimeout)}, nil)
	longest := max(longestRun, coordinator.DefaultBuildDeadline, coordinator.DefaultStepDeadline)
	top := time.Duration(metrics.StageBuckets[len(metrics.StageBuckets)-1] * float64(time.Second))
	if top < longest {
		t.Errorf("last stage bucket %s < longest stage deadline %s", top, longest)
	}
	if jobTop := metrics.JobBuckets[len(metrics.JobBuckets)-1]; jobTop < top.Seconds() {
		t.Errorf("last job bucket %vs < last stage bucket %s", jobTop, top)
	}
	if !sort.Float64sAreSorted(metrics.StageBuckets) || !sort.Float64sAreSorted(metrics.JobBuckets) {
		t.Error("buckets are not increasing")
	}
}

// TestModelCost: the cost llm.Router reports is counted by model and
// stage; a model without a price adds 0 and still has its series.
func TestModelCost(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := metrics.NewModel(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs.Cost("gpt-4.1", "plan", 6)
	obs.Cost("gpt-4.1", "plan", 0.5) // a failed call that was billed
	obs.Cost("other", "code", 0)
	got := samples(t, reg)
	for series, want := range map[string]float64{
		metrics.ModelCostTotal + "{model=gpt-4.1,stage=plan}": 6.5,
		metrics.ModelCostTotal + "{model=other,stage=code}":   0,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
}

// describedBackend says which Python it runs and what its runs run on.
type describedBackend struct{ scriptedBackend }

func (describedBackend) PythonVersion() string { return "3.12" }
func (describedBackend) Identity() string      { return "python 3.12.1, base sha256:abc" }

// TestObserveBackendKeepsWhatTheBackendSays: counting a backend's runs
// hides nothing it says of itself. Every server's sandbox worker runs its
// backend counted; were its Python version lost, a job asking for another
// Python would run on this one, and were its identity lost, results from
// another interpreter or base image would be served from the cache.
func TestObserveBackendKeepsWhatTheBackendSays(t *testing.T) {
	t.Parallel()
	b, err := metrics.ObserveBackend(describedBackend{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	v, ok := b.(sandbox.PythonVersioned)
	if !ok || v.PythonVersion() != "3.12" {
		t.Errorf("counted backend: PythonVersioned %v, want it saying 3.12", ok)
	}
	id, ok := b.(sandbox.Identified)
	if !ok || id.Identity() != "python 3.12.1, base sha256:abc" {
		t.Errorf("counted backend: Identified %v, want the backend's identity", ok)
	}
	// One that says neither still cannot say.
	quiet, err := metrics.ObserveBackend(scriptedBackend{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := quiet.(sandbox.PythonVersioned); ok && v.PythonVersion() != "" {
		t.Errorf("a backend that does not say its Python: counted, it says %q", v.PythonVersion())
	}
}
