package evaluate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Files in Config.Out.
const (
	ResultsFile  = "results.jsonl"
	CSVFile      = "results.csv"
	MarkdownFile = "results.md"
)

// hiddenTimeout bounds one run of the hidden tests.
const hiddenTimeout = 2 * time.Minute

// Run evaluates: every problem of the set not finished in Out's results
// file runs as a job, then its hidden tests run on the job's final script;
// each problem's row is appended as it ends. At the end (or when ctx ends)
// it writes the CSV and the Markdown table, and the summary to stdout.
func Run(ctx context.Context, cfg Config, log *slog.Logger, stdout, stderr io.Writer) (Summary, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	problems, err := selectProblems(cfg)
	if err != nil {
		return Summary{}, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return Summary{}, err
	}
	if err := keepSettings(cfg); err != nil {
		return Summary{}, err
	}
	results, rows, err := openResults(filepath.Join(cfg.Out, ResultsFile))
	if err != nil {
		return Summary{}, err
	}
	defer results.Close()
	e, err := start(ctx, cfg, problems, log, stderr)
	if err != nil {
		return Summary{}, err
	}
	defer e.close()
	order := make([]string, len(problems))
	var todo []problemset.Problem
	for i, p := range problems {
		order[i] = p.TaskID
		if r, ok := rows[p.TaskID]; !ok || r.Pending {
			todo = append(todo, p)
		}
	}
	e.results, e.rows = results, rows
	e.progress = newProgress(cfg.Progress, stderr, len(problems), len(problems)-len(todo))
	runErr := e.runAll(ctx, todo)
	e.progress.finish()
	s := Summarize(order, e.snapshot())
	if err := writeReports(cfg, order, e.snapshot()); err != nil {
		return s, err
	}
	fmt.Fprintf(stdout, "%d of %d problems: pass@1 %s, false success %s (%d of %d), false failure %s (%d of %d); %s and %s in %s\n",
		s.Done, s.Problems, pct(s.PassAt1()), pct(s.FalseSuccessRate()), s.FalseSuccess, s.Successes,
		pct(s.FalseFailureRate()), s.FalseFailure, s.Failures, filepath.Join(cfg.Out, CSVFile), MarkdownFile, cfg.Out)
	return s, runErr
}

// SettingsFile records, beside the results, what they were made with.
const SettingsFile = "settings.json"

// keepSettings writes what this run's rows depend on (the problem set's
// content, the model or fake mode, the job options) to SettingsFile, and
// refuses to resume rows made with other settings: a finished row is
// kept as it is, so a run with another model would report the old one's.
func keepSettings(cfg Config) error {
	path, err := problemsPath(cfg)
	if err != nil {
		return err
	}
	set, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(set)
	options := slices.Sorted(slices.Values(cfg.Options))
	cur, err := json.MarshalIndent(map[string]any{"problems_sha256": hex.EncodeToString(sum[:]), "fake": cfg.Fake,
		"model": cfg.Stack.Model, "max_iterations": cfg.MaxIterations, "options": options}, "", "  ")
	if err != nil {
		return err
	}
	file := filepath.Join(cfg.Out, SettingsFile)
	old, err := os.ReadFile(file)
	switch {
	case err == nil && !bytes.Equal(bytes.TrimSpace(old), cur):
		return fmt.Errorf("the results in %s were made with other settings (%s): give another --out, or remove it to start again", cfg.Out, file)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return os.WriteFile(file, append(cur, '\n'), 0o644)
}

// problemsPath is the problem set's file: Config.Problems, else HumanEval
// at problemset.DefaultPath of the working directory.
func problemsPath(cfg Config) (string, error) {
	if cfg.Problems != "" {
		return cfg.Problems, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return problemset.DefaultPath(wd), nil
}

// selectProblems loads the set and keeps every Nth, up to Limit.
func selectProblems(cfg Config) ([]problemset.Problem, error) {
	path, err := problemsPath(cfg)
	if err != nil {
		return nil, err
	}
	all, err := problemset.Load(path)
	if err != nil {
		return nil, err
	}
	var out []problemset.Problem
	for i, p := range all {
		if i%cfg.Every == 0 && (cfg.Limit == 0 || len(out) < cfg.Limit) && (len(cfg.Tasks) == 0 || slices.Contains(cfg.Tasks, p.TaskID)) {
			out = append(out, p)
		}
	}
	for _, id := range cfg.Tasks { // a task asked for by name is run, or the run says why not
		if !slices.ContainsFunc(out, func(p problemset.Problem) bool { return p.TaskID == id }) {
			if !slices.ContainsFunc(all, func(p problemset.Problem) bool { return p.TaskID == id }) {
				return nil, fmt.Errorf("--task %s: no such problem in %s", id, path)
			}
			return nil, fmt.Errorf("--task %s: left out by --every %d or --limit %d", id, cfg.Every, cfg.Limit)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no problem of the set is selected (--every, --limit, --task)")
	}
	return out, nil
}

// evaluation is a running evaluation: the stack the jobs run on, the
// sandbox the hidden tests run in, and the rows so far.
type evaluation struct {
	cfg      Config
	st       *wiring.Stack
	backend  sandbox.Backend
	ownsBE   bool // the backend is not the stack's: close it
	fake     *fakellm.Server
	options  map[string]any
	results  *resultsFile
	progress *progress

	mu   sync.Mutex
	rows map[string]Row
}

// start brings up the stack (the fake model first, if asked) and a sandbox.
func start(ctx context.Context, cfg Config, problems []problemset.Problem, log *slog.Logger, stderr io.Writer) (*evaluation, error) {
	e := &evaluation{cfg: cfg}
	var err error
	if e.options, err = cfg.jobOptions(); err != nil {
		return nil, err
	}
	sc := cfg.Stack
	if cfg.Fake != "" {
		h, err := fakellm.NewHumanEval(problems, fakellm.HumanEvalMode(cfg.Fake))
		if err != nil {
			return nil, err
		}
		e.fake = fakellm.New()
		e.fake.Handle(h.Reply)
		sc.OpenAIBaseURL, sc.OpenAIAPIKey = e.fake.URL(), "fake"
		// Its own model name: the stage cache is keyed by the model, and
		// the two modes answer the same prompts differently.
		sc.Model = "fakellm-humaneval-" + cfg.Fake
		fmt.Fprintf(stderr, "FAKE MODEL: answers come from fakellm's HumanEval model (%s), not from a real model\n", cfg.Fake)
	}
	if _, set := e.options["model"]; !set && sc.Model != "" {
		e.options["model"] = sc.Model // named on every job, so results say which
	}
	opts := wiring.Options{Config: sc, Logger: log, ConnectTimeout: 30 * time.Second}
	if sc.NATSURL == "" {
		opts.Roles = []wiring.Role{wiring.RoleLocal}
	}
	if e.st, err = wiring.Start(ctx, opts); err != nil {
		e.close()
		return nil, fmt.Errorf("start: %w", err)
	}
	if e.backend = e.st.Backend; e.backend == nil {
		if e.backend, err = wiring.OpenBackend(ctx, sc, log, nil, nil); err != nil {
			e.close()
			return nil, fmt.Errorf("sandbox for the hidden tests: %w", err)
		}
		e.ownsBE = true
	}
	return e, nil
}

func (e *evaluation) close() {
	if e.ownsBE && e.backend != nil {
		e.backend.Close()
	}
	if e.st != nil {
		e.st.Close()
	}
	if e.fake != nil {
		e.fake.Close()
	}
}

// runAll runs the problems, Parallel at once, until done or ctx ends.
func (e *evaluation) runAll(ctx context.Context, todo []problemset.Problem) error {
	work := make(chan problemset.Problem)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for range min(e.cfg.Parallel, max(len(todo), 1)) {
		wg.Go(func() {
			for p := range work {
				if err := e.runOne(ctx, p); err != nil {
					errOnce.Do(func() { firstErr = err })
				}
			}
		})
	}
feed:
	for _, p := range todo {
		select {
		case work <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}

// runOne runs one problem's job (or watches it again after a crash), then
// its hidden tests, and appends its row. Only a results file that cannot
// be written, or ctx ending, is an error: a job that fails is a row.
func (e *evaluation) runOne(ctx context.Context, p problemset.Problem) error {
	row, err := e.job(ctx, p)
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: the pending row resumes it
	}
	if err != nil {
		row.Status, row.Error = messages.StatusErrored, err.Error()
	}
	row.Pending, row.Finished = false, time.Now().UTC()
	if err := e.record(row); err != nil {
		return err
	}
	e.progress.done(row, e.snapshot())
	return nil
}

// job submits the problem (or finds its job from before a crash), waits
// for the result and runs the hidden tests.
func (e *evaluation) job(ctx context.Context, p problemset.Problem) (Row, error) {
	row := Row{TaskID: p.TaskID}
	e.mu.Lock()
	prev, resumed := e.rows[p.TaskID]
	e.mu.Unlock()
	if resumed && prev.JobID != "" {
		if _, err := e.st.Client.Status(ctx, prev.JobID); err == nil {
			row.JobID = prev.JobID
		}
	}
	if row.JobID == "" {
		spec, err := e.spec(p)
		if err != nil {
			return row, err
		}
		row.JobID = client.NewJobID()
		if err := e.record(Row{TaskID: p.TaskID, JobID: row.JobID, Pending: true}); err != nil {
			return row, err
		}
		if err := e.st.Client.Submit(ctx, row.JobID, spec); err != nil {
			return row, fmt.Errorf("submit: %w", err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, e.cfg.ProblemTimeout)
	defer cancel()
	res, err := e.st.Client.Watch(wctx, row.JobID, nil)
	if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
		return e.timedOut(ctx, p, row)
	}
	if err != nil {
		return row, fmt.Errorf("watch job %s: %w", row.JobID, err)
	}
	fill(&row, res, e.cfg)
	row.Hidden, row.HiddenDetail = e.hidden(ctx, p, res)
	return row, nil
}

// timedOut cancels a job that ran past --problem-timeout, so it spends
// nothing more and does not run beside the next problems past --parallel,
// and makes its row from the cancelled result: a failure, with no script
// to run the hidden tests on.
func (e *evaluation) timedOut(ctx context.Context, p problemset.Problem, row Row) (Row, error) {
	why := fmt.Sprintf("past --problem-timeout %v", e.cfg.ProblemTimeout)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for { // a submission not taken yet has no job to cancel: wait for it
		_, err := e.st.Client.Cancel(wctx, row.JobID, "eval", why)
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrNotFound) || wctx.Err() != nil {
			return row, fmt.Errorf("job %s %s, and not cancelled: %w", row.JobID, why, err)
		}
		select {
		case <-wctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	res, err := e.st.Client.WaitResult(wctx, row.JobID)
	if err != nil {
		return row, fmt.Errorf("job %s %s: cancelled, and its result not seen: %w", row.JobID, why, err)
	}
	fill(&row, res, e.cfg)
	if res.Cancelled == nil { // it finished on its own first: judged as any
		row.Hidden, row.HiddenDetail = e.hidden(ctx, p, res)
		return row, nil
	}
	row.Error = why + ": cancelled"
	row.Hidden = HiddenNone
	return row, nil
}

// spec is the problem's job: its prompt, and the evaluation's options.
func (e *evaluation) spec(p problemset.Problem) (messages.JobSpec, error) {
	raw, err := json.Marshal(map[string]any{"name": jobName(p.TaskID), "prompt": p.TaskPrompt(), "options": e.options})
	if err != nil {
		return messages.JobSpec{}, err
	}
	spec, err := messages.DecodeJobSpecJSON(raw)
	if err != nil {
		return messages.JobSpec{}, fmt.Errorf("job spec: %w", err)
	}
	return *spec, nil
}

// fill copies a result's figures into a row.
func fill(row *Row, res *messages.Result, cfg Config) {
	row.Status, row.Success, row.Error = res.Status, res.Success, res.Error
	row.Iterations, row.LLMCalls, row.CacheHits = res.Attempts, res.LLMCalls, res.CacheHits
	row.InputTokens, row.OutputTokens = res.TotalInputTokens, res.TotalOutputTokens
	row.CostUSD = (float64(res.TotalInputTokens)*cfg.PriceIn + float64(res.TotalOutputTokens)*cfg.PriceOut) / 1e6
	if res.FinishedAt != nil && !res.SubmittedAt.IsZero() {
		row.WallSeconds = res.FinishedAt.Sub(res.SubmittedAt).Seconds()
	}
	row.Strength = strengthCols(res)
}

// hidden runs the problem's hidden tests on the job's final script, in an
// environment with the job's packages.
func (e *evaluation) hidden(ctx context.Context, p problemset.Problem, res *messages.Result) (string, string) {
	if res.Solution == nil || res.Solution.Code == "" {
		return HiddenNone, ""
	}
	env, err := e.backend.Build(ctx, sandbox.EnvSpec{Packages: res.DetectedPackages, SystemPackages: res.DetectedSystemPackages})
	if err != nil {
		return HiddenError, "build: " + err.Error()
	}
	rep, err := sandbox.RunTests(ctx, e.backend, sandbox.TestRun{Env: env.ID, Code: res.Solution.Code, Tests: p.HiddenTests(), Timeout: hiddenTimeout})
	switch {
	case err != nil:
		return HiddenError, err.Error()
	case rep.OK():
		return HiddenPassed, ""
	}
	detail := fmt.Sprintf("%d passed, %d failed, %d errors", rep.Passed, rep.Failed, rep.Errors)
	for _, c := range rep.Cases {
		if c.Outcome == messages.OutcomeFailed || c.Outcome == messages.OutcomeError {
			detail += ": " + oneLine(c.Message)
			break
		}
	}
	return HiddenFailed, trim(detail, 300)
}

// record appends a row and keeps it.
func (e *evaluation) record(row Row) error {
	if err := e.results.append(row); err != nil {
		return err
	}
	e.mu.Lock()
	e.rows[row.TaskID] = row
	e.mu.Unlock()
	return nil
}

func (e *evaluation) snapshot() map[string]Row {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]Row, len(e.rows))
	for k, v := range e.rows {
		out[k] = v
	}
	return out
}

// writeReports writes the CSV and the Markdown table.
func writeReports(cfg Config, order []string, rows map[string]Row) error {
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(cfg.Out, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return f.Close()
	}
	title := "Evaluation of " + setName(cfg)
	return errors.Join(
		write(CSVFile, func(w io.Writer) error { return WriteCSV(w, order, rows) }),
		write(MarkdownFile, func(w io.Writer) error { return WriteMarkdown(w, title, order, rows) }),
	)
}

func setName(cfg Config) string {
	name := "HumanEval"
	if cfg.Problems != "" {
		name = filepath.Base(cfg.Problems)
	}
	model := cfg.Stack.Model
	if cfg.Fake != "" {
		model = "the fake model (" + cfg.Fake + ")"
	}
	return name + " with " + model
}

// jobName is a job name made of a task ID ("HumanEval/0" -> "humaneval-0").
func jobName(taskID string) string {
	out := make([]rune, 0, len(taskID))
	for _, r := range taskID {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			out = append(out, r)
		case r >= 'A' && r <= 'Z':
			out = append(out, r+'a'-'A')
		default:
			out = append(out, '-')
		}
	}
	return trim(string(out), 60)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// strengthCols reads a result's test strength (nil when not measured).
func strengthCols(res *messages.Result) *StrengthCols {
	ts := res.TestStrength
	if ts == nil || ts.Error != "" || ts.Judged() == 0 {
		return nil
	}
	return &StrengthCols{Score: ts.Score, Initial: ts.InitialScore(), Mutants: ts.Mutants, Killed: ts.Killed,
		Survived: ts.Survived, Equivalent: ts.Equivalent, Rounds: ts.Rounds, Calls: ts.Usage.Calls,
		Tokens: ts.Usage.InputTokens + ts.Usage.OutputTokens}
}
