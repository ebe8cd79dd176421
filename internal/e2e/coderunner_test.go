package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/pkg/messages"
)

// End-to-end tests of the code runner (issue 13): options.validate: run
// checks the script by running it in the sandbox, a failed run goes back
// to the model as a reflection turn, and a docs folder larger than the
// prompt's documentation budget is retrieved by chunk.

// scriptedCodeRunner is the example's transcript: a plan, a first script
// that fails at run time and the script the reflection turn returns.
func scriptedCodeRunner(t *testing.T, fake *fakellm.Server) (first, fixed string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "coderunner", "transcript.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Replies struct {
			Plan     []messages.Plan     `json:"plan"`
			Solution []messages.Solution `json:"solution"`
		} `json:"replies"`
	}
	if err := json.Unmarshal(b, &tr); err != nil || len(tr.Replies.Plan) != 1 || len(tr.Replies.Solution) != 2 {
		t.Fatalf("example transcript: %v (%d plans, %d solutions)", err, len(tr.Replies.Plan), len(tr.Replies.Solution))
	}
	fake.On("plan", fakellm.JSON(tr.Replies.Plan[0]))
	fake.On("solution", fakellm.JSON(tr.Replies.Solution[0]), fakellm.JSON(tr.Replies.Solution[1]))
	return tr.Replies.Solution[0].Code, tr.Replies.Solution[1].Code
}

func codeRunnerSpec(t *testing.T) messages.JobSpec {
	dir := filepath.Join(repoRoot(t), "examples", "coderunner")
	return messages.JobSpec{
		Prompt:  "Read the ZRL log in the sample `log` and compute mean_t1, the mean of the readings of sensor T1 that count, in degrees, rounded to 2 decimals, and t1_records, the number of T1 records that count. Follow the ZRL format documentation.",
		Samples: map[string]string{"log": filepath.Join(dir, "log.zrl")},
		Context: []string{filepath.Join(dir, "docs", "zrl")},
		Outputs: map[string]messages.Type{"mean_t1": messages.TypeFloat, "t1_records": messages.TypeInt},
		Options: messages.Options{Validate: messages.ValidateRun, MaxIterations: 3},
	}
}

// requestText is every message of each request with schema name schema.
func requestText(fake *fakellm.Server, schema string) []string {
	var out []string
	for _, r := range fake.Requests() {
		if r.SchemaName != schema {
			continue
		}
		var b strings.Builder
		for _, m := range r.Messages {
			b.WriteString(m.Content + "\n")
		}
		out = append(out, b.String())
	}
	return out
}

// TestCodeRunnerReflectsAndRetrievesDocs: the first script crashes on the
// made-up format's values; the run's error goes to a reflection turn whose
// docs are retrieved for that error; the second run exits 0 with typed
// outputs. No tests are written or run, and the result lists the chunks
// each model stage was given.
func TestCodeRunnerReflectsAndRetrievesDocs(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	first, fixed := scriptedCodeRunner(t, fake)
	cfg := testConfig(t, fake)
	cfg.ContextBytes = "6Ki" // the docs folder is 28 KiB
	st := startLocal(t, cfg)
	res := runJob(t, st, codeRunnerSpec(t))
	if !res.Success {
		t.Fatalf("job failed: %s\n%s", res.Error, res.Output)
	}
	if res.Outputs["mean_t1"] != 26.78 || res.Outputs["t1_records"] != 4.0 {
		t.Errorf("outputs %v, want mean_t1 26.78 and t1_records 4", res.Outputs)
	}
	if want := []string{"profile", "plan", "code", "build", "acceptance", "fix", "acceptance"}; !slices.Equal(stageNames(res), want) {
		t.Errorf("stages %v, want %v (no tests written or run)", stageNames(res), want)
	}
	if res.Tests != "" || res.Attempts != 2 || res.Solution.Code != fixed || res.Solution.Code == first {
		t.Errorf("tests %q, attempts %d, fixed code on the result %v; want no tests, 2 runs, the fixed code", res.Tests, res.Attempts, res.Solution.Code == fixed)
	}
	if out := res.Stages[4].Outcome; !strings.Contains(out, "exited with code 1: ValueError: could not convert string to float: '0a1f'") {
		t.Errorf("first run's outcome %q does not name the crash", out)
	}

	// The reflection turn saw the run's error and the chunk that explains it.
	solutions := requestText(fake, "solution")
	if len(solutions) != 2 {
		t.Fatalf("%d solution requests, want the code and one reflection", len(solutions))
	}
	reflection := solutions[1]
	for _, want := range []string{"There are no tests: the run itself is the check", "exit code 1", "ValueError: could not convert string to float: '0a1f'",
		"t1_records (int)", "zrl/format.md, part 3 (Values: hex fixed point)", "signed 16-bit\ninteger in two's complement"} {
		if !strings.Contains(reflection, want) {
			t.Errorf("the reflection request lacks %q", want)
		}
	}
	// Every model call got a retrieved part of the docs, never the
	// dashboard page, which shares no word with the task.
	for _, req := range append(requestText(fake, "plan"), solutions...) {
		if !strings.Contains(req, "most relevant to this step") || !strings.Contains(req, "Retracted records must be skipped") {
			t.Errorf("a request lacks the retrieved chunk on retracted records:\n%.400s", req)
		}
		if strings.Contains(req, "twelve-colour palette") || strings.Contains(req, "dashboard.html") {
			t.Errorf("a request holds the irrelevant dashboard page")
		}
		if strings.Contains(req, "| E001 |") && strings.Contains(req, "| E300 |") {
			t.Errorf("a request holds the whole error table: the docs were pasted, not retrieved")
		}
	}

	// The result names the chunks, per stage, with their scores.
	var used []string
	for _, c := range res.ContextUsed {
		used = append(used, string(c.Stage))
		if !c.Retrieved || len(c.Chunks) == 0 {
			t.Errorf("%s stage: retrieved %v, %d chunks; want retrieved chunks", c.Stage, c.Retrieved, len(c.Chunks))
		}
		for _, ch := range c.Chunks {
			if ch.File == "zrl/display.html" {
				t.Errorf("%s stage lists the dashboard page %+v", c.Stage, ch)
			}
		}
	}
	if !slices.Equal(used, []string{"plan", "code", "fix"}) {
		t.Fatalf("context_used stages %v, want plan, code, fix", used)
	}
	best := res.ContextUsed[2].Chunks[0]
	if best.File != "zrl/format.md" || best.Heading != "Values: hex fixed point" || best.Score <= 0 {
		t.Errorf("the reflection's best chunk is %+v, want format.md's section on values (the error is about one)", best)
	}
}

// TestCodeRunnerExampleScripted runs examples/coderunner through the CLI
// with its scripted transcript, as docs/coderunner.md shows.
func TestCodeRunnerExampleScripted(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	cfg := testConfig(t, nil)
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "", ""
	job := filepath.Join(repoRoot(t), "examples", "coderunner", "job.yaml")
	code, stdout, stderr := cli(t, cfg, "--local", "--json", job)
	if code != submit.ExitSuccess {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	res := decodeResult(t, stdout)
	if res.Outputs["mean_t1"] != 26.78 || res.Outputs["t1_records"] != 4.0 || countStage(res, messages.StageFix) != 1 || len(res.ContextUsed) != 3 {
		t.Errorf("outputs %v, stages %v, %d context records", res.Outputs, stageNames(res), len(res.ContextUsed))
	}
}

// TestCodeRunnerContextErrors: context that is not documentation, or too
// large, is refused by submit before anything connects, naming the file.
func TestCodeRunnerContextErrors(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, nil)
	dir := t.TempDir()
	png := filepath.Join(dir, "logo.png")
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(png, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, []byte(strings.Repeat("x", messages.MaxContextFile+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{png, "context " + png + ": docsearch: not documentation (want .md"},
		{big, "context " + big + ": larger than 2 MiB"},
		{filepath.Join(dir, "nope"), "no such file or directory"},
	} {
		code, _, stderr := cli(t, cfg, "--prompt", "count", "--option", "validate=run", "--context", tc.path)
		if code != submit.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("--context %s: exit %d, stderr %q; want exit %d naming %q", tc.path, code, stderr, submit.ExitUsage, tc.want)
		}
	}
}
