package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The throughput benchmark's settings. Their defaults are the smoke run the
// test command makes (-bench . -benchtime 1x): four problems, one sandbox
// worker. BENCHMARKS.md gives the full run's flags.
var (
	tpJobs        = flag.Int("throughput.jobs", 4, "HumanEval problems to run (the first N of 164)")
	tpConcurrency = flag.String("throughput.concurrency", "", "comma-separated jobs in flight at once (default: all of them)")
	tpWorkers     = flag.String("throughput.workers", "1", "comma-separated sandbox-worker counts")
	tpWarm        = flag.String("throughput.warm", "", "comma-separated AUTOCODER_WARM_RUNNER values for the sandbox-workers (default: unset)")
	tpFirstPass   = flag.String("throughput.firstpass", "one_round", "comma-separated options.first_pass values")
	tpPlot        = flag.String("throughput.plot", "", "directory to write the PNG plots to (default: none)")
	tpVerbose     = flag.Bool("throughput.v", false, "log each job's stages")
	tpReplot      = flag.String("throughput.replot", "", "draw the plots again from DIR/throughput.json, without running")
)

// BenchmarkThroughput submits HumanEval jobs (the fake model serves each
// problem's canonical solution and its check as the tests) to autocoder
// running as separate processes with NATS authentication on (coordinator,
// llm-worker, sandbox-workers: fleet), keeping a given number in flight,
// and in the same iteration runs bare pytest on the same files one after
// another. The model answers at once: what is measured is the system
// against a bare pytest process per test file.
//
// Metrics: jobs/min and bare-jobs/min; wall/bare, the ratio of the two
// wall times (below 1 is faster than bare pytest); passed, the jobs that
// succeeded (all must); hop-p50-ms and hop-p99-ms, the orchestration gap
// before each stage: from the end of the stage whose result let it start
// (the latest to end before it; the submission for the first) to its start
// on a worker. Stage durations are whole milliseconds, so a gap is
// overstated by up to 1 ms.
func BenchmarkThroughput(b *testing.B) {
	if *tpReplot != "" {
		points, err := loadPoints(*tpReplot)
		if err == nil {
			err = writePlots(*tpReplot, points)
		}
		if err != nil {
			b.Fatal(err)
		}
		return
	}
	requireSandboxTools(b)
	problems := loadHumanEval(b, *tpJobs)
	fake := fakellm.New()
	b.Cleanup(fake.Close)
	fake.Handle(humanEvalBook(problems, 0).Reply)

	var points []tpPoint
	for _, warm := range splitList(*tpWarm, "") {
		for _, workers := range intList(b, *tpWorkers) {
			for _, fp := range splitList(*tpFirstPass, "one_round") {
				name := fmt.Sprintf("workers=%d/first_pass=%s", workers, fp)
				if warm != "" {
					name = "warm=" + warm + "/" + name
				}
				b.Run(name, func(b *testing.B) {
					fl := startFleet(b, fleetConfig{modelURL: fake.URL(), sandboxWorkers: workers, warm: warm})
					st := fl.client(b)
					rs := watchResults(b, st)
					warmUp(b, st, rs, fl, problems[0], messages.FirstPass(fp))
					for _, c := range concurrencies(b, len(problems)) {
						p := tpPoint{warm: warm, workers: workers, firstPass: fp, concurrency: c}
						for i := 0; i < b.N; i++ {
							p.add(runBatch(b, st, rs, fl, problems, messages.FirstPass(fp), c), barePytest(b, problems))
						}
						p.report(b, len(problems))
						points = append(points, p)
					}
				})
			}
		}
	}
	if *tpPlot != "" && len(points) > 0 {
		if err := writePlots(*tpPlot, points); err != nil {
			b.Fatal(err)
		}
		if err := savePoints(*tpPlot, points); err != nil {
			b.Fatal(err)
		}
	}
}

// warmUp runs one job, so the first measured batch does not pay the
// workers' first environment build.
func warmUp(b *testing.B, st *wiring.Stack, rs *results, fl *fleet, p humanEvalProblem, fp messages.FirstPass) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	if r := runBatch(b, st, rs, fl, []humanEvalProblem{p}, fp, 1); r.passed != 1 {
		b.Fatalf("warm-up job failed\n%s", fl.logs())
	}
}

// batch is what one run of the problems took.
type batch struct {
	wall   time.Duration
	passed int
	hops   []time.Duration
}

// runBatch submits the problems' jobs, at most c in flight, and waits for
// every result.
func runBatch(b *testing.B, st *wiring.Stack, rs *results, fl *fleet, problems []humanEvalProblem, fp messages.FirstPass, c int) batch {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		out  batch
		errs []string
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, c)
	start := time.Now()
	for _, p := range problems {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			res, err := rs.run(ctx, st.Client, p.spec(fp))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, p.TaskID+": "+err.Error())
			case !res.Success:
				errs = append(errs, fmt.Sprintf("%s: %s: %s", p.TaskID, res.Status, res.Error))
			default:
				if *tpVerbose {
					b.Logf("%s: %s", p.TaskID, timeline(res))
				}
				out.passed++
				out.hops = append(out.hops, hopGaps(res)...)
			}
		}()
	}
	wg.Wait()
	out.wall = time.Since(start)
	if len(errs) > 0 {
		b.Fatalf("%d of %d jobs did not pass:\n%s\n%s", len(errs), len(problems), strings.Join(errs, "\n"), fl.logs())
	}
	return out
}

// results hands each job's result to its waiter, from one watch of the
// results bucket (a poll per job would load the server it measures).
type results struct {
	mu      sync.Mutex
	waiters map[string]chan *messages.Result
}

func watchResults(b *testing.B, st *wiring.Stack) *results {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := st.Resources.JobResults.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		cancel()
		b.Fatalf("watch results: %v", err)
	}
	r := &results{waiters: map[string]chan *messages.Result{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.Updates() {
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var res messages.Result
			if json.Unmarshal(e.Value(), &res) != nil {
				continue
			}
			r.mu.Lock()
			ch := r.waiters[e.Key()]
			delete(r.waiters, e.Key())
			r.mu.Unlock()
			if ch != nil {
				ch <- &res
			}
		}
	}()
	b.Cleanup(func() { _ = w.Stop(); cancel(); <-done })
	return r
}

// run submits spec and waits for its result.
func (r *results) run(ctx context.Context, c *client.Client, spec messages.JobSpec) (*messages.Result, error) {
	id := client.NewJobID()
	ch := make(chan *messages.Result, 1)
	r.mu.Lock()
	r.waiters[bus.JobKey(id)] = ch
	r.mu.Unlock()
	if err := c.Submit(ctx, id, spec); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	select {
	case res := <-ch:
		return res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("job %s: %w", id, ctx.Err())
	}
}

// hopGaps are the orchestration gaps before each stage of a job: from the
// end of the stage that ended last before it started (the submission, for
// the first) to its start.
func hopGaps(r *messages.Result) []time.Duration {
	stages := slices.Clone(r.Stages)
	slices.SortFunc(stages, func(a, b messages.StageRecord) int { return a.StartedAt.Compare(b.StartedAt) })
	var out []time.Duration
	for i, s := range stages {
		from := r.SubmittedAt
		for _, prev := range stages[:i] {
			if end := prev.StartedAt.Add(time.Duration(prev.DurationMS) * time.Millisecond); end.After(from) && !end.After(s.StartedAt) {
				from = end
			}
		}
		out = append(out, max(s.StartedAt.Sub(from), 0))
	}
	return out
}

// tpPoint is one setting's measurements, summed over the iterations.
type tpPoint struct {
	warm        string
	workers     int
	firstPass   string
	concurrency int
	runs        int
	wall, bare  time.Duration
	passed      int
	hops        []time.Duration
}

func (p *tpPoint) add(r batch, bare time.Duration) {
	p.runs++
	p.wall += r.wall
	p.bare += bare
	p.passed += r.passed
	p.hops = append(p.hops, r.hops...)
}

func (p *tpPoint) jobsPerMin(n int) float64 { return float64(n*p.runs) / p.wall.Minutes() }
func (p *tpPoint) bareJobsPerMin(n int) float64 {
	return float64(n*p.runs) / p.bare.Minutes()
}

// report prints the setting's line: b.ReportMetric keeps one value per
// unit, so each concurrency gets its own line in the log as well.
func (p *tpPoint) report(b *testing.B, n int) {
	b.Helper()
	p50, p99 := percentile(p.hops, 50), percentile(p.hops, 99)
	b.Logf("concurrency %d: %.1f jobs/min, bare pytest %.1f jobs/min, wall/bare %.2f, passed %d/%d, hop p50 %.1f ms, p99 %.1f ms",
		p.concurrency, p.jobsPerMin(n), p.bareJobsPerMin(n), float64(p.wall)/float64(p.bare), p.passed, n*p.runs, ms(p50), ms(p99))
	b.ReportMetric(p.jobsPerMin(n), "jobs/min")
	b.ReportMetric(p.bareJobsPerMin(n), "bare-jobs/min")
	b.ReportMetric(float64(p.wall)/float64(p.bare), "wall/bare")
	b.ReportMetric(float64(p.passed)/float64(p.runs), "passed")
	b.ReportMetric(ms(p50), "hop-p50-ms")
	b.ReportMetric(ms(p99), "hop-p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the q-th percentile (nearest rank) of ds; 0 for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*q/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// concurrencies are the -throughput.concurrency levels, n (all at once)
// by default.
func concurrencies(b *testing.B, n int) []int {
	if *tpConcurrency == "" {
		return []int{n}
	}
	var out []int
	for _, c := range intList(b, *tpConcurrency) {
		out = append(out, min(c, n))
	}
	return out
}

func splitList(s, def string) []string {
	if s == "" {
		return []string{def}
	}
	return strings.Split(s, ",")
}

func intList(b *testing.B, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out
}

// timeline is a job's stages, each at its start after the submission.
func timeline(r *messages.Result) string {
	var parts []string
	for _, s := range r.Stages {
		parts = append(parts, fmt.Sprintf("%s@%dms+%dms", s.Name, s.StartedAt.Sub(r.SubmittedAt).Milliseconds(), s.DurationMS))
	}
	return strings.Join(parts, " ")
}
