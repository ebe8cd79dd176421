package messages

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSettingsRefused: every per-job setting is checked, and the error
// names it.
func TestSettingsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		options, field string
	}{
		{`{"temperature": 2.5}`, "options.temperature"},
		{`{"temperature": -1}`, "options.temperature"},
		{`{"top_p": 0}`, "options.top_p"},
		{`{"max_tokens": -3}`, "options.max_tokens"},
		{`{"model": "a model"}`, "options.model"},
		{`{"system_prompt": "` + strings.Repeat("x", MaxSystemPrompt+1) + `"}`, "options.system_prompt"},
		{`{"env_vars": {"LD_PRELOAD": "x"}}`, "options.env_vars.LD_PRELOAD"},
		{`{"env_vars": {"PATH": "/x"}}`, "options.env_vars.PATH"},
		{`{"env_vars": {"9A": "x"}}`, "options.env_vars.9A"},
		{`{"secrets": ["PYTHONPATH"]}`, "options.secrets[0]"},
		{`{"secrets": ["A", "A"]}`, "options.secrets[1]"},
		{`{"env_vars": {"A": "1"}, "secrets": ["A"]}`, "options.secrets[0]"},
		{`{"python": "2.7"}`, "options.python"},
		{`{"sandbox_retries": 11}`, "options.sandbox_retries"},
		{`{"max_sample_rows": 1001}`, "options.max_sample_rows"},
		{`{"max_sample_rows": -1}`, "options.max_sample_rows"},
		{`{"sandbox_retries": 1, "bogus": 1}`, "options.bogus"},
	}
	for _, tt := range tests {
		_, err := DecodeJobSpecJSON([]byte(`{"prompt": "p", "options": ` + tt.options + `}`))
		if fe, ok := err.(*FieldError); !ok || fe.Field != tt.field {
			t.Errorf("options %.60s: %v, want a field error on %s", tt.options, err, tt.field)
		}
	}
	ok := `{"prompt": "p", "options": {"temperature": 0, "top_p": 1, "seed": 7, "max_tokens": 100, "model": "qwen2.5-coder:7b",
		"system_prompt": "s", "system_prompt_prefix": "p", "env_vars": {"REGION": "north"}, "secrets": ["DB_PASSWORD"],
		"python": "3.12", "sandbox_retries": 2}}`
	spec, err := DecodeJobSpecJSON([]byte(ok))
	if err != nil || *spec.Options.Temperature != 0 || *spec.Options.Seed != 7 || spec.Options.Python != "3.12" {
		t.Fatalf("valid settings: %v %+v", err, spec)
	}
	spec.Normalize("")
	if spec.Options.Resources.Memory != DefaultMemory {
		t.Errorf("memory defaults to %q", spec.Options.Resources.Memory)
	}
}

// TestRunOptions: a run's options lay over a task's defaults, and both
// over the job's options.
func TestRunOptions(t *testing.T) {
	t.Parallel()
	one, three := 1, 3
	defaults := &RunOptions{Resources: Resources{Memory: "256Mi"}, Timeout: Duration(30 * time.Second), Retries: &three,
		EnvVars: map[string]string{"A": "task", "B": "task"}, Secrets: []string{"S1"}}
	run := &RunOptions{Resources: Resources{CPU: 2}, Retries: &one, Cache: CacheOverride, EnvVars: map[string]string{"A": "run"}, Secrets: []string{"S2"}}
	got := run.Over(defaults)
	want := &RunOptions{Resources: Resources{CPU: 2, Memory: "256Mi"}, Timeout: Duration(30 * time.Second), Retries: &one,
		Cache: CacheOverride, EnvVars: map[string]string{"A": "run", "B": "task"}, Secrets: []string{"S1", "S2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Over (-want +got):\n%s", diff)
	}
	if (*RunOptions)(nil).Over(nil) != nil || (&RunOptions{}).Over(nil) != nil {
		t.Error("no options lay over nothing as something")
	}
	// Over a task's defaults as over a job's: a name the run gives is the
	// run's, in the run's kind (task register --secret DB, task run --env DB=test).
	crossed := (&RunOptions{EnvVars: map[string]string{"S1": "test"}, Secrets: []string{"B"}}).Over(defaults)
	if diff := cmp.Diff(&RunOptions{Resources: Resources{Memory: "256Mi"}, Timeout: Duration(30 * time.Second), Retries: &three,
		EnvVars: map[string]string{"A": "task", "S1": "test"}, Secrets: []string{"B"}}, crossed); diff != "" {
		t.Errorf("Over, names in the other kind (-want +got):\n%s", diff)
	}
	if crossed.Validate() != nil || defaults.EnvVars["S1"] != "" || len(defaults.Secrets) != 1 {
		t.Errorf("the layered options do not validate (%v), or the defaults changed: %+v", crossed.Validate(), defaults)
	}
	job := Options{Timeout: Duration(time.Minute), Resources: Resources{CPU: 1, Memory: "1Gi"}, SandboxRetries: 0,
		EnvVars: map[string]string{"S2": "plain", "C": "job"}, Secrets: []string{"B"}}
	got.ApplyTo(&job)
	if job.Resources != (Resources{CPU: 2, Memory: "256Mi"}) || job.Timeout.Std() != 30*time.Second || job.SandboxRetries != 1 || job.Cache != CacheOverride {
		t.Errorf("ApplyTo: %+v", job)
	}
	// A run's secret replaces a job's plain value of that name, and a run's
	// plain value a job's secret.
	if diff := cmp.Diff(map[string]string{"A": "run", "B": "task", "C": "job"}, job.EnvVars); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"S1", "S2"}, job.Secrets); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	if err := (&RunOptions{Retries: &[]int{11}[0]}).Validate(); err == nil || err.(*FieldError).Field != "options.retries" {
		t.Errorf("retries 11: %v", err)
	}
	b, _ := json.Marshal(RunOptions{})
	if string(b) != `{"resources":{}}` && string(b) != `{}` {
		t.Errorf("empty run options encode as %s", b)
	}
}
