package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestSalesExampleScripted runs the README's main command in-process:
// submit --local --json examples/sales/job.yaml, with no OPENAI_API_KEY, so
// the scripted transcript drives the real pipeline. The transcript's first
// solution has a bug the loop must fix.
func TestSalesExampleScripted(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	cfg := testConfig(t, nil)
	cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "", ""
	var stdout, stderr bytes.Buffer
	job := filepath.Join(repoRoot(t), "examples", "sales", "job.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := submit.Run(ctx, []string{"--local", "--json", job}, cfg, submit.IO{Stdout: &stdout, Stderr: &stderr})
	if code != submit.ExitSuccess {
		t.Fatalf("exit %d\nstderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	if !strings.Contains(stderr.String(), "SCRIPTED MODEL") {
		t.Error("the scripted run is not labelled as scripted")
	}
	var res messages.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not a result object: %v\n%s", err, stdout.String())
	}
	want := map[string]any{"total_revenue": 1485.95, "total_units": float64(127), "row_count": float64(24)}
	for k, v := range want {
		if res.Outputs[k] != v {
			t.Errorf("outputs[%s] = %#v, want %v", k, res.Outputs[k], v)
		}
	}
	if res.Attempts != 2 || countStage(&res, messages.StageFix) != 1 {
		t.Errorf("attempts %d, stages %v: want the scripted bug fixed in iteration 2", res.Attempts, stageNames(&res))
	}
	if res.DataContext == "" || len(res.GeneratedSchemas) == 0 {
		t.Errorf("no data context or schemas on the result")
	}
	found := false
	for _, p := range res.DetectedPackages {
		found = found || p == "pandas"
	}
	if !found {
		t.Errorf("detected packages %v lack pandas", res.DetectedPackages)
	}
	// Contract 5 (docs/contracts.md): every field is present in the JSON.
	var raw map[string]json.RawMessage
	json.Unmarshal(stdout.Bytes(), &raw)
	for _, f := range []string{"job_id", "success", "attempts", "outputs", "plan", "solution", "tests", "output", "exit_code", "error", "image",
		"detected_packages", "detected_system_packages", "generated_schemas", "data_context", "total_input_tokens", "total_output_tokens",
		"llm_calls", "cache_hits", "stages", "conversation_history"} {
		if _, ok := raw[f]; !ok {
			t.Errorf("result lacks %q", f)
		}
	}
}

// TestBadInputExitsTwo: every kind of bad input gets exit 2 and one line
// that names the problem, before anything starts.
func TestBadInputExitsTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"malformed yaml", []string{"--local", write("a.yaml", "prompt: [x\n")}, "malformed YAML"},
		{"malformed json", []string{"--local", write("b.json", `{"prompt": `)}, "malformed JSON"},
		{"unknown field", []string{"--local", write("c.yaml", "prompt: x\nsamplez: {}\n")}, "samplez: unknown field"},
		{"unsupported type", []string{"--local", write("d.yaml", "prompt: x\noutputs: {n: decimal}\n")}, `outputs.n: unsupported type "decimal"`},
		{"missing sample", []string{"--local", write("e.yaml", "prompt: x\nsamples: {s: nope.csv}\n")}, "samples.s: sample file"},
		{"binary garbage", []string{"--local", write("f.yaml", "\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe")}, "not UTF-8"},
		{"negative max_iterations", []string{"--local", write("g.yaml", "prompt: x\noptions: {max_iterations: -3}\n")}, "options.max_iterations: must not be negative"},
		{"no job", []string{"--local"}, "give a job file or --prompt"},
		{"missing job file", []string{"--local", filepath.Join(dir, "none.yaml")}, "no such file"},
		{"bad flag", []string{"--bogus"}, "flag provided but not defined"},
		{"bad option flag", []string{"--local", "--prompt", "x", "--option", "max_iterations=-1"}, "options.max_iterations"},
		{"bad output flag", []string{"--local", "--prompt", "x", "--output", "n"}, "want name=value"},
		{"no nats", []string{write("h.yaml", "prompt: x\n")}, "AUTOCODER_NATS_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t, nil)
			var stdout, stderr bytes.Buffer
			code := submit.Run(context.Background(), tc.args, cfg, submit.IO{Stdout: &stdout, Stderr: &stderr})
			if code != submit.ExitUsage {
				t.Fatalf("exit %d, want 2; stderr: %s", code, stderr.String())
			}
			msg := strings.TrimSpace(stderr.String())
			if tc.name != "bad flag" && strings.Count(msg, "\n") != 0 {
				t.Errorf("want one line, got:\n%s", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q does not name the problem (%q)", msg, tc.want)
			}
		})
	}
}
