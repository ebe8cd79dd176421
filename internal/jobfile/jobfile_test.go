package jobfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeRejectsBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"malformed yaml", "prompt: [unclosed\n", "malformed YAML"},
		{"malformed json", `{"prompt": "x",}`, "malformed JSON"},
		{"unknown field", "prompt: x\nfoo: 1\n", "foo: unknown field"},
		{"unknown nested field", "prompt: x\noptions: {modle: gpt}\n", "options.modle: unknown field"},
		{"unknown json field", `{"prompt":"x","optons":{}}`, "optons: unknown field"},
		{"unsupported output type", "prompt: x\noutputs: {n: integer}\n", `outputs.n: unsupported type "integer"`},
		{"unsupported input type", "prompt: x\ninputs: {t: datetime}\n", `inputs.t: unsupported type "datetime"`},
		{"negative max_iterations", "prompt: x\noptions: {max_iterations: -1}\n", "options.max_iterations: must not be negative"},
		{"wrong type", "prompt: x\noptions: {max_iterations: many}\n", "options.max_iterations: must be an integer"},
		{"binary garbage", "\x00\x01\x02\xff\xfe", "not UTF-8"},
		{"not a mapping", "- a\n- b\n", "must be a mapping"},
		{"empty", "  \n", "empty"},
		{"missing prompt", "name: x\n", "prompt: is required"},
		{"bad timeout", "prompt: x\noptions: {timeout: soon}\n", "options.timeout"},
		{"bad cache mode", "prompt: x\noptions: {cache: sometimes}\n", "options.cache"},
		{"agent_max_turns out of range", "prompt: x\noptions: {backend: agent, agent_max_turns: 100000}\n", "options.agent_max_turns: must be between 1 and 500"},
		{"unknown backend", "prompt: x\noptions: {backend: magic}\n", "options.backend"},
		{"bad package name", "prompt: x\noptions: {base_packages: ['numpy; rm -rf /']}\n", "options.base_packages[0]"},
		{"options not a mapping", "prompt: x\noptions: 3\n", "options: must be a mapping"},
		{"bad input name", "prompt: x\ninputs: {class: int}\n", "inputs.class: must be a Python identifier"},
		{"bad memory", "prompt: x\noptions: {resources: {memory: lots}}\n", "options.resources.memory"},
		{"two documents", "prompt: a\n---\nprompt: b\n", "one YAML document"},
		{"a bad second document", "prompt: a\n---\nprompt: [unclosed\n", "one YAML document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode(%q) error = %v, want it to contain %q", tc.in, err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestDecodeAcceptsTheContractExample(t *testing.T) {
	t.Parallel()
	in := `name: summarize-sales
prompt: Read the CSV and compute total_revenue, total_units and row_count.
schema: |
  free text
constraints: ["quantity must be positive", "price between 0 and 10000"]
samples: {sales: examples/sales/sales.csv}
inputs:  {threshold: float}
outputs: {total_revenue: float, total_units: int, row_count: int}
options:
  model: gpt-4.1
  max_iterations: 10
  skip_tests: false
  max_sample_rows: 100
  base_packages: [numpy]
  cache: auto
  timeout: 60s
  resources: {cpu: 1, memory: 512Mi}
  backend: pipeline
`
	spec, err := Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Options.Timeout.Std().Seconds() != 60 || spec.Outputs["row_count"] != "int" || spec.Samples["sales"] == "" {
		t.Errorf("decoded %+v", spec)
	}
}

func TestLoadChecksSampleFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	os.WriteFile(job, []byte("prompt: x\nsamples: {sales: missing.csv}\n"), 0o644)
	if _, err := Load(job, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "samples.sales: sample file") {
		t.Fatalf("err = %v", err)
	}
	os.WriteFile(filepath.Join(dir, "missing.csv"), []byte("a\n1\n"), 0o644)
	spec, err := Load(job, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Samples["sales"] != filepath.Join(dir, "missing.csv") {
		t.Errorf("sample path not resolved: %s", spec.Samples["sales"])
	}
	os.Mkdir(filepath.Join(dir, "d.csv"), 0o755)
	os.WriteFile(job, []byte("prompt: x\nsamples: {s: d.csv}\n"), 0o644)
	if _, err := Load(job, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("prompt: x\noutputs: {n: int}\n"))
	f.Add([]byte(`{"prompt":"x","options":{"timeout":"5s"}}`))
	f.Add([]byte("options: {resources: {memory: 1Gi}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := Decode(data) // must never panic
		if err == nil && spec == nil {
			t.Fatal("nil spec without error")
		}
	})
}

// TestDecodeEscapesNamesFromTheFile: a field name, output name or value in
// a job file that holds terminal escape sequences is shown escaped in the
// error, never sent to the terminal as is.
func TestDecodeEscapesNamesFromTheFile(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"unknown field, YAML escape", "prompt: x\n\"\\e[31m\": 1\n", `"\x1b[31m": unknown field`},
		{"unknown nested field", "prompt: x\noptions: {\"\\e]0;title\\a\": 1}\n", `"options.\x1b]0;title\a": unknown field`},
		{"output name", "prompt: x\noutputs: {\"\\e[31mn\": int}\n", `"outputs.\x1b[31mn": must be a Python identifier`},
		{"unknown field, JSON", `{"prompt":"x","\u001b]0;title\u0007":1}`, `"\x1b]0;title\a": unknown field`},
		{"raw escape bytes", "prompt: x\n\x1b[31m: 1\n", "control characters are not allowed"},
		{"sample path", "prompt: x\nsamples: {s: \"\\e[31m.csv\"}\n", `samples.s: sample file \x1b[31m.csv not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := Decode([]byte(tc.in))
			if err == nil { // a valid spec: the sample check names the path
				err = LocalFiles{Dir: t.TempDir()}.Resolve(spec)
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\x1b\x07") {
				t.Errorf("error %q holds raw control characters", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to contain %q, escaped", msg, tc.want)
			}
		})
	}
}
