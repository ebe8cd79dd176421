package evaluate_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/evaluate"
	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/pkg/messages"
)

// datasets is the HumanEval directory; outside CI a missing one is a skip.
func datasets(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	path := problemset.DefaultPath(wd)
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("HumanEval dataset missing (%v): set AUTOCODER_DATASETS to its directory", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap not found: run scripts/setup.sh")
	}
}

// evalConfig is an evaluation of every nth problem on embedded defaults
// and the process sandbox, with the fake model in mode.
func evalConfig(t *testing.T, mode string, every int) evaluate.Config {
	t.Helper()
	requireSandbox(t)
	sc := config.FromEnv()
	sc.StateDir, sc.NATSURL, sc.RedisURL = t.TempDir(), "", ""
	sc.Sandbox, sc.Python, sc.LogLevel, sc.Concurrency = "process", "/usr/bin/python3", "warn", 2
	return evaluate.Config{Problems: datasets(t), Out: t.TempDir(), Fake: mode, Every: every, Parallel: 2,
		PriceIn: 2, PriceOut: 8, ProblemTimeout: 5 * time.Minute, Stack: sc}
}

func run(t *testing.T, ctx context.Context, cfg evaluate.Config) (evaluate.Summary, string) {
	t.Helper()
	var out, errs bytes.Buffer
	s, err := evaluate.Run(ctx, cfg, slog.New(slog.DiscardHandler), &out, &errs)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, errs.String())
	}
	return s, out.String() + errs.String()
}

// The fake model serving canonical solutions: every hidden test passes,
// nothing is a false success, and the tables say so.
func TestEvaluateCanonical(t *testing.T) {
	t.Parallel()
	cfg := evalConfig(t, "canonical", 16)
	s, log := run(t, t.Context(), cfg)
	if s.Done != s.Problems || s.Problems != 11 || s.HiddenPassed != s.Done || s.FalseSuccess != 0 || s.Successes != s.Done {
		t.Fatalf("summary %+v\n%s", s, log)
	}
	if s.LLMCalls == 0 || s.Tokens == 0 || s.CostUSD <= 0 || s.WallSeconds <= 0 {
		t.Errorf("calls, tokens, cost or wall time missing: %+v", s)
	}
	recs := readCSV(t, filepath.Join(cfg.Out, evaluate.CSVFile))
	if len(recs) != 12 || recs[0][0] != "task_id" || recs[1][0] != "HumanEval/0" || recs[1][3] != evaluate.HiddenPassed {
		t.Errorf("CSV: %q", recs[:min(len(recs), 2)])
	}
	md, err := os.ReadFile(filepath.Join(cfg.Out, evaluate.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| pass@1 on hidden tests | 100.0% (11 of 11) |", "| false success | 0.0% (0 of 11 successes) |", "| HumanEval/160 | succeeded | true | passed |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
}

// A job past --problem-timeout is cancelled, not left running beside the
// next problems, and its row says so: a failure with no script.
func TestEvaluateProblemTimeoutCancelsTheJob(t *testing.T) {
	t.Parallel()
	cfg := evalConfig(t, "canonical", 80) // 0, 80, 160
	cfg.ProblemTimeout = time.Millisecond
	s, log := run(t, t.Context(), cfg)
	if s.Done != s.Problems || s.HiddenPassed != 0 || s.Successes != 0 {
		t.Fatalf("summary %+v\n%s", s, log)
	}
	for _, rec := range readCSV(t, filepath.Join(cfg.Out, evaluate.CSVFile))[1:] {
		if rec[1] != string(messages.StatusCancelled) || rec[3] != evaluate.HiddenNone {
			t.Errorf("row %q: want the job cancelled and no hidden test run", rec[:4])
		}
	}
}

// The plausible-but-wrong model: its weak tests pass the off-by-one, the
// jobs say success, and the hidden tests catch them: false successes.
func TestEvaluatePlausibleWrong(t *testing.T) {
	t.Parallel()
	cfg := evalConfig(t, "plausible-wrong", 16)
	s, log := run(t, t.Context(), cfg)
	if s.Done != s.Problems || s.FalseSuccess == 0 || s.FalseSuccess != s.Successes-s.HiddenPassed {
		t.Fatalf("summary %+v\n%s", s, log)
	}
}

// A crash leaves a results file with finished rows, a torn line and a
// pending row; the next run keeps the finished problems, runs the rest, and
// resumes the pending one.
func TestEvaluateResumes(t *testing.T) {
	t.Parallel()
	cfg := evalConfig(t, "canonical", 40) // 0, 40, 80, 120, 160
	finished := `{"task_id":"HumanEval/0","job_id":"before-the-crash","status":"succeeded","success":true,"hidden":"passed","iterations":1}`
	pending := `{"task_id":"HumanEval/40","job_id":"01J0000000000000000000GONE","pending":true}`
	torn := `{"task_id":"HumanEval/80","job_id":"x","sta`
	path := filepath.Join(cfg.Out, evaluate.ResultsFile)
	if err := os.WriteFile(path, []byte(finished+"\n"+pending+"\n"+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	// The first run is interrupted once a problem finished.
	ctx, cancel := context.WithCancel(t.Context())
	cfg1 := cfg
	cfg1.Parallel = 1
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out bytes.Buffer
		_, _ = evaluate.Run(ctx, cfg1, slog.New(slog.DiscardHandler), &out, cancelAfterLine{cancel: cancel, w: io.Discard})
	}()
	<-done
	cancel()
	s, log := run(t, t.Context(), cfg)
	if s.Done != 5 || s.HiddenPassed != 5 {
		t.Fatalf("summary after resuming %+v\n%s", s, log)
	}
	recs := readCSV(t, filepath.Join(cfg.Out, evaluate.CSVFile))
	for _, r := range recs[1:] {
		if r[0] == "HumanEval/0" && r[22] != "before-the-crash" {
			t.Errorf("a finished problem ran again: %q", r)
		}
	}
}

// Rows are resumed only by a run with the settings they were made with: a
// run with another model (here the other fake) into the same --out is
// refused, not reported with the first run's figures.
func TestEvaluateRefusesToResumeOtherSettings(t *testing.T) {
	t.Parallel()
	cfg := evalConfig(t, "canonical", 80)
	run(t, t.Context(), cfg)
	other := cfg
	other.Fake = "plausible-wrong"
	var out, errs bytes.Buffer
	_, err := evaluate.Run(t.Context(), other, slog.New(slog.DiscardHandler), &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Fatalf("a run with another model into the same --out: %v, want a refusal", err)
	}
	if _, log := run(t, t.Context(), cfg); !strings.Contains(log, "3 of 3 problems") {
		t.Errorf("the same settings again do not resume:\n%s", log)
	}
}

// cancelAfterLine cancels the run at its first progress line: a problem
// has finished.
type cancelAfterLine struct {
	cancel context.CancelFunc
	w      io.Writer
}

func (c cancelAfterLine) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("[")) {
		c.cancel()
	}
	return c.w.Write(p)
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	base := config.FromEnv()
	cfg, err := evaluate.ParseArgs([]string{"--fake", "canonical", "--parallel", "3", "--option", "cache=override", "--price-in", "2.5"}, base, io.Discard, false)
	if err != nil || cfg.Fake != "canonical" || cfg.Parallel != 3 || cfg.PriceIn != 2.5 || len(cfg.Options) != 1 {
		t.Errorf("ParseArgs: %+v, %v", cfg, err)
	}
	for _, bad := range [][]string{{"--fake", "perfect"}, {"--parallel", "1000"}, {"--option", "novalue"}, {"--price-out", "-1"}, {"extra"}} {
		if _, err := evaluate.ParseArgs(bad, base, io.Discard, false); err == nil {
			t.Errorf("ParseArgs(%q) accepted", bad)
		}
	}
}
