package bench

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

const python = "/usr/bin/python3"

var (
	hopSync  = flag.String("hop.sync", "", "BenchmarkStageHop: the embedded NATS server's sync policy (AUTOCODER_NATS_SYNC; default always)")
	hopStage = flag.Duration("hop.stage", 0, "BenchmarkStageHop: how long each model and sandbox call takes (default: none)")
)

// BenchmarkStageHop measures what the distributed loop costs per stage hop
// (coordinator -> stage stream -> worker -> result stream -> coordinator,
// with the KV compare-and-set, the outbox and the progress events), on the
// real stack on embedded defaults. The model answers at once (a fake
// OpenAI server over HTTP) and the sandbox is instantBackend, so almost all
// of a job's time is orchestration; what the workers' own calls took is
// measured and subtracted anyway.
//
// ns/op is one first-pass job as a client sees it (submit to result).
// ns/hop is the coordinator's time from taking the submission to taking the
// last result, minus the time the workers spent in the model and the
// sandbox, divided by the sequential hops (coordinator steps that dispatched
// stages: code and tests go out together and count once). ns/stage divides
// the same by every stage result. hop-p50-us and hop-p99-us are the
// distribution of single hops: the gap before each stage's first model or
// sandbox call, from the end of the call that ended last before it (the
// submission for the first). A sandbox stage's Run after its own Build is
// not a hop (spans.recordRun); until 2026-11-28 it was counted, a quarter
// of the samples at about 10 µs, which flattered p50 by a third. rtt-ns,
// rtt-p50-us and rtt-p99-us are the baseline, measured in the same run on the same server, ten samples after
// every job: one JetStream publish (with its ack) to a waiting pull
// consumer that double-acks it. hop/rtt is ns/hop over rtt-ns; p99/rtt is
// hop-p99 over the round trip's p99.
//
// -hop.sync sets the embedded server's sync policy (AUTOCODER_NATS_SYNC;
// default always, every write flushed to disk): with 2m, what a hop costs
// when writes do not wait for the disk. -hop.stage makes every model and
// sandbox call take that long (a sleep): with none, each hop starts while
// the previous one's last writes (its events, the index line, the
// command's acknowledgement) still go to the disk; with some, the
// machine's cores go idle between hops, and every hand-over of a hop (a
// process or goroutine woken by a message) pays a wake-up: on this
// 2-vCPU virtual machine 5 ms stages make the hop slower, not faster
// (BENCHMARKS.md). Each round trip of the baseline then waits as long
// before it starts, so it too begins on an idle machine.
func BenchmarkStageHop(b *testing.B) {
	r := newRigSync(b, *hopStage, instantBackend{took: *hopStage}, *hopSync)
	probe := newRTTProbe(b, r.st.JS)
	r.job(b)             // warm-up: connections, consumers, first allocations
	probe.take(b, 50, 0) // warm-up

	// The baseline is sampled after every job, so both see the same load
	// on the machine (other processes share its cores). The first round
	// trips after a job share the disk with the writes the job's last step
	// still makes once its client has the result (the outbox cleared, the
	// last command acknowledged): up to twice as slow at p99. A JetStream
	// round trip is one on a quiet stack, so those are not counted.
	var sum jobRun
	var rtts []time.Duration
	const rttsPerJob, rttsDropped = 10, 2
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sum.add(r.job(b))
		n++
		b.StopTimer()
		rtts = append(rtts, probe.take(b, rttsDropped+rttsPerJob, *hopStage)[rttsDropped:]...)
		b.StartTimer()
	}
	var rtt time.Duration
	for _, d := range rtts {
		rtt += d
	}
	rttMean := float64(rtt.Nanoseconds()) / float64(len(rtts))
	overhead := sum.coord - sum.busy
	perHop := float64(overhead.Nanoseconds()) / float64(sum.rounds)
	b.ReportMetric(perHop, "ns/hop")
	b.ReportMetric(float64(overhead.Nanoseconds())/float64(sum.stages), "ns/stage")
	b.ReportMetric(rttMean, "rtt-ns")
	b.ReportMetric(perHop/rttMean, "hop/rtt")
	b.ReportMetric(float64(sum.rounds)/float64(n), "hops/job")
	b.ReportMetric(float64(sum.busy.Nanoseconds())/float64(n), "work-ns/job")
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	hp99, rp99 := percentile(sum.gaps, 99), percentile(rtts, 99)
	b.ReportMetric(us(percentile(sum.gaps, 50)), "hop-p50-us")
	b.ReportMetric(us(hp99), "hop-p99-us")
	b.ReportMetric(us(percentile(rtts, 50)), "rtt-p50-us")
	b.ReportMetric(us(rp99), "rtt-p99-us")
	b.ReportMetric(float64(hp99)/float64(rp99), "p99/rtt")
	b.ReportMetric(float64(r.writes(b, "KV_"+bus.BucketJobIndex))/float64(n+1), "index-writes/job")
	b.ReportMetric(float64(r.writes(b, "KV_"+bus.BucketJobState))/float64(n+1), "state-writes/job")
}

// writes is how many messages stream has stored since it was made: a
// bucket's writes (the warm-up job's too).
func (r *rig) writes(b *testing.B, stream string) uint64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := r.st.JS.Stream(ctx, stream)
	if err != nil {
		b.Fatal(err)
	}
	return s.CachedInfo().State.LastSeq
}

// BenchmarkJobSync measures what flushing every JetStream write
// (AUTOCODER_NATS_SYNC=always, the default: internal/bus/sync.go) costs a
// whole first-pass job, against nats-server's own default (a flush every
// 2m), on the stack of BenchmarkStageHop (model and sandbox instant, so the
// job is all orchestration: the worst case for the ratio). ns/op is one
// job; compare the two in the same run.
func BenchmarkJobSync(b *testing.B) {
	for _, policy := range []string{"2m", "always"} {
		b.Run("sync="+policy, func(b *testing.B) {
			r := newRigSync(b, 0, instantBackend{}, policy)
			r.job(b) // warm-up
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.job(b)
			}
		})
	}
}

// BenchmarkFirstPassWall measures a first-pass-success job through the full
// pipeline, with the real process (bubblewrap) sandbox running pytest and
// the acceptance run, and every model call held at latency L, for each
// first pass: one_round (the plan comes with the code, the tests from the
// task, at the same time) and plan_first (the plan, then code and tests).
//
// ns/op is the job's wall time as a client sees it. wall/L is the same in
// units of L; model/L is the part that is not sandbox work, in units of L
// (one round: expect a little over 1; plan first: over 2). seqref/L is the
// sequential reference computed in the same iteration: the reference
// system's order, plan, code, packages and tests one model call each (the
// same fake model, called 4 times in a row), plus the same sandbox time as
// this job. ref/wall is how many times faster the pipeline is than that
// reference.
func BenchmarkFirstPassWall(b *testing.B) {
	const L = 200 * time.Millisecond
	requireSandboxTools(b)
	r := newRig(b, L, nil)
	for _, fp := range []messages.FirstPass{messages.FirstPassOneRound, messages.FirstPassPlanFirst} {
		b.Run("first_pass="+string(fp), func(b *testing.B) {
			r.first = fp
			r.job(b) // warm-up: builds the base environment once
			var sum jobRun
			var ref, modelCalls time.Duration
			n := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := r.job(b)
				sum.add(j)
				n++
				b.StopTimer()
				seq := r.sequentialModelCalls(b)
				modelCalls += seq
				ref += seq + j.sandbox
				b.StartTimer()
			}
			per := func(d time.Duration) float64 { return float64(d) / float64(n) / float64(L) }
			b.ReportMetric(per(sum.wall), "wall/L")
			b.ReportMetric(per(sum.wall-sum.sandbox), "model/L")
			b.ReportMetric(per(ref), "seqref/L")
			b.ReportMetric(float64(ref)/float64(sum.wall), "ref/wall")
			b.ReportMetric(float64(sum.sandbox.Milliseconds())/float64(n), "sandbox-ms")
			b.ReportMetric(float64(modelCalls.Milliseconds())/float64(4*n), "call-ms")
			b.ReportMetric(float64((sum.wall-sum.busy).Milliseconds())/float64(n), "orch-ms")
		})
	}
}

// rig is a whole stack on embedded defaults, in this process, with the
// workers' model calls and sandbox calls timed.
type rig struct {
	first   messages.FirstPass // the jobs' options.first_pass; "" the default
	st      *wiring.Stack
	model   llm.Client // the fake model, untimed, for the sequential reference
	llmWork *spans
	boxWork *spans
}

// newRig starts the stack with a fake model answering every call after
// delay; backend nil means the real process backend.
func newRig(b *testing.B, delay time.Duration, backend sandbox.Backend) *rig {
	b.Helper()
	return newRigSync(b, delay, backend, "")
}

// newRigSync is newRig with the embedded NATS's sync policy (AUTOCODER_NATS_SYNC).
func newRigSync(b *testing.B, delay time.Duration, backend sandbox.Backend, sync string) *rig {
	b.Helper()
	fake := fakellm.New()
	b.Cleanup(fake.Close)
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "return 42", Approach: "a function and a main block"}).Delay(delay))
	fake.On("solution", fakellm.JSON(messages.Solution{Language: "python", Code: answerCode, Packages: []string{}, SystemPackages: []string{}}).Delay(delay))
	fake.On("tests", fakellm.JSON(messages.Tests{Code: answerTests}).Delay(delay))
	fake.On("packages", fakellm.JSON(messages.Packages{Packages: []string{}}).Delay(delay))
	model, err := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: fake.URL(), APIKey: "bench"})
	if err != nil {
		b.Fatal(err)
	}

	cfg := config.FromEnv()
	cfg.StateDir = b.TempDir()
	cfg.NATSURL, cfg.RedisURL = "", ""
	cfg.OpenAIBaseURL, cfg.OpenAIAPIKey = fake.URL(), "bench"
	cfg.Sandbox, cfg.Python, cfg.LogLevel, cfg.Concurrency = "process", python, "warn", 0
	cfg.NATSSync = sync

	if backend == nil {
		// What wiring.OpenBackend opens for AUTOCODER_SANDBOX=process.
		backend, err = bwrap.New(bwrap.Config{Python: python, StateDir: filepath.Join(cfg.StateDir, "envs"),
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatalf("process backend: %v (run scripts/setup.sh)", err)
		}
		b.Cleanup(func() { backend.Close() })
	}
	r := &rig{model: model, llmWork: &spans{}, boxWork: &spans{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.st, err = wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal},
		LLM: timedLLM{model, r.llmWork}, Backend: timedBackend{backend, r.boxWork}})
	if err != nil {
		b.Fatalf("start stack: %v", err)
	}
	b.Cleanup(func() { r.st.Close() })
	return r
}

// jobRun is what one job took.
type jobRun struct {
	wall    time.Duration // client: Submit called to result returned by Watch
	coord   time.Duration // coordinator: submission taken to last result taken
	busy    time.Duration // workers' own work: union of model and sandbox calls
	sandbox time.Duration // union of sandbox calls
	stages  int           // stage results applied
	rounds  int           // coordinator steps that dispatched stages
	gaps    []time.Duration
}

func (s *jobRun) add(o jobRun) {
	s.wall += o.wall
	s.coord += o.coord
	s.busy += o.busy
	s.sandbox += o.sandbox
	s.stages += o.stages
	s.rounds += o.rounds
	s.gaps = append(s.gaps, o.gaps...)
}

// job runs one first-pass job and measures it.
func (r *rig) job(b *testing.B) jobRun {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r.llmWork.take()
	r.boxWork.take()
	id := client.NewJobID()
	// Events of one coordinator step carry that step's time: the distinct
	// times of stage_queued events are the sequential hops.
	steps := map[time.Time]bool{}
	start := time.Now()
	spec := answerSpec()
	spec.Options.FirstPass = r.first
	if err := r.st.Client.Submit(ctx, id, spec); err != nil {
		b.Fatalf("submit: %v", err)
	}
	res, err := r.st.Client.Watch(ctx, id, func(e messages.Event) error {
		if e.Type == messages.EventStageQueued {
			steps[e.Time] = true
		}
		return nil
	})
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("watch: %v", err)
	}
	if !res.Success || res.Attempts != 1 || res.FinishedAt == nil {
		b.Fatalf("not a first-pass success: status %s attempts %d error %q", res.Status, res.Attempts, res.Error)
	}
	llmSpans, boxSpans := r.llmWork.take(), r.boxWork.take()
	return jobRun{
		wall:    wall,
		coord:   res.FinishedAt.Sub(res.SubmittedAt),
		busy:    union(append(llmSpans, boxSpans...)),
		sandbox: union(boxSpans),
		stages:  len(res.Stages),
		rounds:  len(steps),
		gaps:    gaps(start, append(llmSpans, boxSpans...)),
	}
}

// gaps are the hops of one job: before each span of work, the time since
// the end of the span that ended last before it started (since from, the
// submission, for the first).
func gaps(from time.Time, s [][2]time.Time) []time.Duration {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	out := make([]time.Duration, 0, len(s))
	for i, sp := range s {
		last := from
		for _, prev := range s[:i] {
			if prev[1].After(last) && !prev[1].After(sp[0]) {
				last = prev[1]
			}
		}
		out = append(out, sp[0].Sub(last))
	}
	return out
}

// sequentialModelCalls is the model part of the sequential reference: plan,
// code, packages and tests, one call each, one after the other.
func (r *rig) sequentialModelCalls(b *testing.B) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	for _, s := range []llm.Schema{llm.PlanSchema, llm.SolutionSchema, llm.PackagesSchema, llm.TestsSchema} {
		_, err := r.model.Structured(ctx, llm.StructuredRequest{Model: messages.DefaultModel, Schema: s,
			Messages: []messages.ChatMessage{{Role: "system", Content: "You write Python."}, {Role: "user", Content: answerSpec().Prompt}}})
		if err != nil {
			b.Fatalf("reference %s call: %v", s.Name, err)
		}
	}
	return time.Since(start)
}

// rttProbe is the baseline: round trips of one 1 KiB message (about a
// stage command) published on a file-backed work-queue stream, as the
// stack's are, to a waiting pull consumer that double-acks it, as
// bus.Worker does.
type rttProbe struct {
	js    jetstream.JetStream
	acked chan error
}

func newRTTProbe(b *testing.B, js jetstream.JetStream) *rttProbe {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCH_RTT", Subjects: []string{"bench.rtt"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "BENCH_RTT", jetstream.ConsumerConfig{Durable: "rtt", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1))
	if err != nil {
		b.Fatal(err)
	}
	p := &rttProbe{js: js, acked: make(chan error)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			if err != nil {
				continue // e.g. a missed heartbeat on a loaded machine: the iterator goes on
			}
			actx, cancel := context.WithTimeout(context.Background(), time.Minute)
			p.acked <- m.DoubleAck(actx)
			cancel()
		}
	}()
	b.Cleanup(func() {
		it.Stop()
		<-done
	})
	return p
}

// take runs n sequential round trips, each after gap, and returns each
// one's time.
func (p *rttProbe) take(b *testing.B, n int, gap time.Duration) []time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	payload := make([]byte, 1024)
	var out []time.Duration
	for range n {
		time.Sleep(gap)
		start := time.Now()
		if _, err := p.js.Publish(ctx, "bench.rtt", payload); err != nil {
			b.Fatal(err)
		}
		select {
		case err := <-p.acked:
			if err != nil {
				b.Fatal(err)
			}
		case <-ctx.Done():
			b.Fatal("rtt probe: the message never arrived")
		}
		out = append(out, time.Since(start))
	}
	return out
}

// spans records when the workers' own work ran.
type spans struct {
	mu sync.Mutex
	s  [][2]time.Time
	// build is 1 + the index of the last span when it is a sandbox
	// Build, which the Run after it joins (recordRun); 0 otherwise.
	build int
}

func (r *spans) record(start time.Time) { r.add(start, false) }

// recordBuild records a sandbox Build.
func (r *spans) recordBuild(start time.Time) { r.add(start, true) }

// recordRun records a sandbox Run. A stage that runs something first
// makes sure its worker has the environment (a Build, at once when it
// exists: sandboxstages.ensureEnv), then runs: the Run ends the Build's
// span, so the few microseconds between them are not counted as a hop.
// (The stack runs one job at a time here, its sandbox stages one after
// another: the last Build is this stage's.)
func (r *spans) recordRun(start time.Time) {
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.build > 0 {
		r.s[r.build-1][1] = end
		r.build = 0
		return
	}
	r.s = append(r.s, [2]time.Time{start, end})
}

func (r *spans) add(start time.Time, build bool) {
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s = append(r.s, [2]time.Time{start, end})
	r.build = 0
	if build {
		r.build = len(r.s)
	}
}

// take returns the spans recorded so far and forgets them.
func (r *spans) take() [][2]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	r.s, r.build = nil, 0
	return s
}

// union is the time covered by at least one span: concurrent calls (code
// and tests) count once.
func union(s [][2]time.Time) time.Duration {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	var total time.Duration
	var cur [2]time.Time
	for i, sp := range s {
		switch {
		case i == 0:
			cur = sp
		case sp[0].After(cur[1]):
			total += cur[1].Sub(cur[0])
			cur = sp
		case sp[1].After(cur[1]):
			cur[1] = sp[1]
		}
	}
	if len(s) > 0 {
		total += cur[1].Sub(cur[0])
	}
	return total
}

// timedLLM records how long each model call takes.
type timedLLM struct {
	inner llm.Client
	spans *spans
}

var _ llm.Client = timedLLM{}

func (c timedLLM) Structured(ctx context.Context, req llm.StructuredRequest) (llm.StructuredReply, error) {
	defer c.spans.record(time.Now())
	return c.inner.Structured(ctx, req)
}

// timedBackend records how long each sandbox build and run takes.
type timedBackend struct {
	sandbox.Backend
	spans *spans
}

func (t timedBackend) Build(ctx context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	defer t.spans.recordBuild(time.Now())
	return t.Backend.Build(ctx, spec)
}

func (t timedBackend) Run(ctx context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	defer t.spans.recordRun(time.Now())
	return t.Backend.Run(ctx, spec)
}

// Close does nothing: the rig closes the backend it opened.
func (t timedBackend) Close() error { return nil }

// instantBackend is a sandbox that does nothing and answers at once (or
// after took), as a first-pass run of answerCode and answerTests would:
// pytest reports two passing tests, the script writes answer = 42.
type instantBackend struct{ took time.Duration }

var _ sandbox.Backend = instantBackend{}

const instantJUnit = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="2">` +
	`<testcase classname="test_solution" name="test_answer" time="0.001"/>` +
	`<testcase classname="test_solution" name="test_type" time="0.001"/></testsuite></testsuites>`

func (instantBackend) Name() string { return "instant" }
func (instantBackend) Close() error { return nil }

func (b instantBackend) Build(context.Context, sandbox.EnvSpec) (sandbox.Env, error) {
	time.Sleep(b.took)
	return sandbox.Env{ID: "instant"}, nil
}

func (b instantBackend) Run(_ context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	time.Sleep(b.took)
	if slices.Contains(spec.Argv, "pytest") {
		return sandbox.RunResult{Files: map[string][]byte{sandbox.JUnitFile: []byte(instantJUnit)}}, nil
	}
	return sandbox.RunResult{Outputs: map[string][]byte{"answer": []byte("42")}}, nil
}

func answerSpec() messages.JobSpec {
	return messages.JobSpec{
		Prompt:  "Compute the answer to everything (42) and write it as the output answer.",
		Outputs: map[string]messages.Type{"answer": messages.TypeInt},
		// Every iteration does the work: no stage is answered from the cache.
		Options: messages.Options{MaxIterations: 2, Cache: messages.CacheDisable},
	}
}

const answerCode = `import argparse
import os


def answer():
    return 6 * 7


def main(argv=None):
    argparse.ArgumentParser(description="the answer").parse_args(argv)
    os.makedirs("/var/outputs", exist_ok=True)
    with open("/var/outputs/answer", "w") as f:
        f.write(str(answer()))


if __name__ == "__main__":
    main()
`

const answerTests = `from solution import answer


def test_answer():
    assert answer() == 42


def test_type():
    assert isinstance(answer(), int)
`

// requireSandboxTools fails (never skips) when the machine lacks what the
// process backend needs: scripts/setup.sh installs it.
func requireSandboxTools(b *testing.B) {
	b.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Fatal("bwrap not found: run scripts/setup.sh")
	}
	if out, err := exec.Command(python, "-c", "import pytest").CombinedOutput(); err != nil {
		b.Fatalf("%s cannot import pytest (%v: %s): run scripts/setup.sh", python, err, out)
	}
}
