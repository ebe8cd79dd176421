package submit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestFromFlags: the spec built from --prompt, --sample, --input, --output,
// --constraint and --option is the one a job file with the same content gives.
func TestFromFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                                    string
		samples, inputs, outputs, cons, options multi
		want                                    messages.JobSpec
	}{
		{name: "prompt only", want: messages.JobSpec{Prompt: "p"}},
		{
			name:    "typed inputs, outputs, samples and constraints",
			samples: multi{"sales=data/sales.csv", "rates=/abs/rates.json"},
			inputs:  multi{"threshold=float", "region=str", "config=File"},
			outputs: multi{"total=float", "count=int", "report=Dir", "when=datetime"},
			cons:    multi{"quantity must be positive", "price between 0 and 10000"},
			want: messages.JobSpec{Prompt: "p",
				Samples:     map[string]string{"sales": "data/sales.csv", "rates": "/abs/rates.json"},
				Inputs:      map[string]messages.Type{"threshold": messages.TypeFloat, "region": messages.TypeStr, "config": messages.TypeFile},
				Outputs:     map[string]messages.Type{"total": messages.TypeFloat, "count": messages.TypeInt, "report": messages.TypeDir, "when": messages.TypeDatetime},
				Constraints: []string{"quantity must be positive", "price between 0 and 10000"},
			},
		},
		{
			name: "options of every kind",
			options: multi{"max_iterations=5", "skip_tests=true", "model=gpt-4.1-mini", "cache=override", "timeout=90s",
				"base_packages=numpy,pandas", "max_sample_rows=20", "backend=pipeline"},
			want: messages.JobSpec{Prompt: "p", Options: messages.Options{MaxIterations: 5, SkipTests: true, Model: "gpt-4.1-mini",
				Cache: messages.CacheOverride, Timeout: messages.Duration(90 * time.Second), BasePackages: []string{"numpy", "pandas"},
				MaxSampleRows: 20, Backend: messages.BackendPipeline}},
		},
		{
			name:    "one base package is a list of one",
			options: multi{"base_packages=numpy"},
			want:    messages.JobSpec{Prompt: "p", Options: messages.Options{BasePackages: []string{"numpy"}}},
		},
		{
			name:    "timeout in seconds",
			options: multi{"timeout=30"},
			want:    messages.JobSpec{Prompt: "p", Options: messages.Options{Timeout: messages.Duration(30 * time.Second)}},
		},
		{
			name:    "nested resources",
			options: multi{"resources.cpu=2", "resources.memory=1Gi"},
			want:    messages.JobSpec{Prompt: "p", Options: messages.Options{Resources: messages.Resources{CPU: 2, Memory: "1Gi"}}},
		},
		{
			name:    "string options stay strings",
			options: multi{"resources.memory=1073741824", "model=4"},
			want:    messages.JobSpec{Prompt: "p", Options: messages.Options{Model: "4", Resources: messages.Resources{Memory: "1073741824"}}},
		},
		{
			name:    "a value with '=' in it",
			cons:    multi{"ratio = a/b"},
			samples: multi{"s=dir/a=b.csv"},
			want:    messages.JobSpec{Prompt: "p", Constraints: []string{"ratio = a/b"}, Samples: map[string]string{"s": "dir/a=b.csv"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := fromFlags("p", tc.samples, tc.inputs, tc.outputs, tc.cons, tc.options)
			if err != nil {
				t.Fatalf("fromFlags: %v", err)
			}
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromFlagsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                             string
		prompt                           string
		samples, inputs, outputs, option multi
		want                             string
	}{
		{name: "no value", prompt: "p", outputs: multi{"n"}, want: "--output \"n\": want name=value"},
		{name: "no name", prompt: "p", inputs: multi{"=int"}, want: "--input \"=int\": want name=value"},
		{name: "bad type", prompt: "p", outputs: multi{"n=decimal"}, want: `outputs.n: unsupported type "decimal"`},
		{name: "bad sample name", prompt: "p", samples: multi{"my-data=x.csv"}, want: "samples.my-data: must be a Python identifier"},
		{name: "unknown option", prompt: "p", option: multi{"retries=3"}, want: "options.retries: unknown field"},
		{name: "unknown nested option", prompt: "p", option: multi{"resources.gpu=1"}, want: "options.resources.gpu: unknown field"},
		{name: "bad option value", prompt: "p", option: multi{"max_iterations=-1"}, want: "options.max_iterations: must not be negative"},
		{name: "option of the wrong type", prompt: "p", option: multi{"skip_tests=maybe"}, want: "options.skip_tests"},
		{name: "bad cache mode", prompt: "p", option: multi{"cache=sometimes"}, want: "options.cache"},
		{name: "bad package", prompt: "p", option: multi{"base_packages=numpy,rm -rf"}, want: "options.base_packages"},
		{name: "empty prompt", prompt: "  ", want: "prompt: is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := fromFlags(tc.prompt, tc.samples, tc.inputs, tc.outputs, nil, tc.option)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("fromFlags = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestRunFlagSpecBadInput runs the CLI on flag-built specs that must be
// refused before anything starts: exit 2 and one line naming the field.
func TestRunFlagSpecBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sample := filepath.Join(dir, "s.csv")
	if err := os.WriteFile(sample, []byte("a\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--local", "--allow-outside", "--prompt", "p", "--sample", "s=" + filepath.Join(dir, "none.csv")}, "samples.s: sample file"},
		{[]string{"--local", "--prompt", "p", "--sample", "s=" + sample}, "absolute paths and .. are refused (pass --allow-outside"},
		{[]string{"--local", "--prompt", "p", "--sample", "s=../../etc/passwd"}, "absolute paths and .. are refused (pass --allow-outside"},
		{[]string{"--local", "--prompt", "p", "--context", "/etc"}, "absolute paths and .. are refused (pass --allow-outside"},
		{[]string{"--local", "--prompt", "p", "--option", "resources.memory=1"}, "options.resources.memory"},
		{[]string{"--local", "--prompt", "p", "--input", "x=int", "--output", "x=int", "--allow-outside", "--sample", "x=" + sample}, "inputs.x: name is already used"},
		{[]string{"--local", "--prompt", "p", "job.yaml"}, "give a job file or --prompt"},
		// --out with a job left running would write nothing.
		{[]string{"--prompt", "p", "--out", filepath.Join(dir, "out"), "--wait", "0"}, "--out with --wait 0s"},
		{[]string{"run", "job-1", "--out", filepath.Join(dir, "out"), "--wait", "0"}, "--out with --wait 0s"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			var stdout, stderr strings.Builder
			code := Run(t.Context(), tc.args, cfg, IO{Stdout: &stdout, Stderr: &stderr})
			msg := strings.TrimSpace(stderr.String())
			if code != ExitUsage || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line with %q", code, msg, tc.want)
			}
		})
	}
}
