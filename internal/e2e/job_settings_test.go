package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestModelSettingsReachRequests: a job's temperature, max_tokens, top_p,
// seed, system_prompt and system_prompt_prefix go with every model call
// it makes, and they are part of the stages' cache keys: the same job
// with the same settings is answered from the cache, with another
// temperature it asks the model again.
func TestModelSettingsReachRequests(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	st := startLocal(t, testConfig(t, fake))
	temp, topP, seed := 0.2, 0.9, int64(42)
	spec := answerSpec()
	spec.Options.Temperature, spec.Options.TopP, spec.Options.Seed, spec.Options.MaxTokens = &temp, &topP, &seed, 777
	spec.Options.SystemPrompt = "You are the ACME data team's Python coder."
	spec.Options.SystemPromptPrefix = "Company rule: standard library first."
	res := runJob(t, st, spec)
	if !res.Success {
		t.Fatalf("job failed: %s", res.Error)
	}
	reqs := fake.Requests()
	if len(reqs) < 3 {
		t.Fatalf("%d model calls", len(reqs))
	}
	for _, r := range reqs {
		if r.Temperature == nil || float32(*r.Temperature) != float32(temp) || r.TopP == nil || float32(*r.TopP) != float32(topP) ||
			r.Seed == nil || *r.Seed != seed || r.MaxTokens != 777 {
			t.Errorf("%s request: temperature %v top_p %v seed %v max_tokens %d", r.SchemaName, deref(r.Temperature), deref(r.TopP), r.Seed, r.MaxTokens)
		}
		sys := r.Messages[0]
		if sys.Role != "system" || !strings.HasPrefix(sys.Content, spec.Options.SystemPromptPrefix+"\n\n"+spec.Options.SystemPrompt+"\n\n") ||
			strings.Contains(sys.Content, "You are a senior Python engineer") {
			t.Errorf("%s request's system message starts %q", r.SchemaName, sys.Content[:min(len(sys.Content), 160)])
		}
	}
	if again := runJob(t, st, spec); !again.Success || again.LLMCalls != 0 {
		t.Errorf("the same job again: success %v, %d model calls; want every call from the cache", again.Success, again.LLMCalls)
	}
	warmer := 0.7
	spec.Options.Temperature = &warmer
	if other := runJob(t, st, spec); !other.Success || other.LLMCalls == 0 {
		t.Errorf("another temperature: success %v, %d model calls; want the model asked again", other.Success, other.LLMCalls)
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// TestTwoModelsTwoEndpoints: with a model table, two jobs naming two models
// reach two endpoints, each with its key and under the name the endpoint
// knows; each result shows its job's cost from the table's prices, the
// cost counter has it by model, and a model the table lacks is refused at
// submit with the field.
func TestTwoModelsTwoEndpoints(t *testing.T) {
	t.Parallel()
	big, small := fakellm.New(), fakellm.New()
	defer big.Close()
	defer small.Close()
	scriptBasics(big, sol(code("6 * 7")))
	scriptBasics(small, sol(code("6 * 7")))
	dir := t.TempDir()
	keyFile, smallKey := filepath.Join(dir, "big.key"), filepath.Join(dir, "small.key")
	if err := os.WriteFile(keyFile, []byte("key-of-big\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(smallKey, []byte("key-of-small"), 0o600); err != nil {
		t.Fatal(err)
	}
	models := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(models, []byte(fmt.Sprintf(`default: big
currency: USD
models:
  - {name: big, base_url: %q, api_key_file: %q, input_price: 2, output_price: 8}
  - {name: small, remote: qwen-coder-7b, base_url: %q, api_key_file: %q, input_price: 0.5, output_price: 1}
`, big.URL(), keyFile, small.URL(), smallKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, nil)
	cfg.ModelsFile = models
	reg := prometheus.NewRegistry()
	requireSandboxTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}, Metrics: metrics.NewBuilderOn(reg)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	bigSpec := answerSpec() // no model: the table's default
	res1 := runJob(t, st, bigSpec)
	smallSpec := answerSpec()
	smallSpec.Prompt += " (small model)"
	smallSpec.Options.Model = "small"
	res2 := runJob(t, st, smallSpec)
	if !res1.Success || !res2.Success {
		t.Fatalf("jobs: %s / %s", res1.Error, res2.Error)
	}
	for _, c := range []struct {
		fake       *fakellm.Server
		model, key string
		res        *messages.Result
		in, out    float64
	}{{big, "big", "key-of-big", res1, 2, 8}, {small, "qwen-coder-7b", "key-of-small", res2, 0.5, 1}} {
		reqs := c.fake.Requests()
		if len(reqs) != c.res.LLMCalls || len(reqs) == 0 {
			t.Errorf("%s: %d requests for a job of %d model calls", c.model, len(reqs), c.res.LLMCalls)
		}
		for _, r := range reqs {
			if r.Model != c.model || r.APIKey != c.key {
				t.Errorf("a request to the %s endpoint named %q with key %q", c.model, r.Model, r.APIKey)
			}
		}
		want := (float64(c.res.TotalInputTokens)*c.in + float64(c.res.TotalOutputTokens)*c.out) / 1e6
		if math.Abs(c.res.TotalCost-want) > 1e-12 || want == 0 {
			t.Errorf("job %s: total_cost %v, want %v", c.res.JobID, c.res.TotalCost, want)
		}
		name := c.res.Spec.Options.Model
		if mc := c.res.CostByModel[name]; math.Abs(mc.Cost-want) > 1e-12 || mc.Calls != c.res.LLMCalls {
			t.Errorf("job %s: cost_by_model %+v", c.res.JobID, c.res.CostByModel)
		}
	}
	if res1.Spec.Options.Model != "big" {
		t.Errorf("the default model is %q, want the table's", res1.Spec.Options.Model)
	}
	if got := counterValue(t, reg, "autocoder_model_cost_total", "big"); math.Abs(got-res1.TotalCost) > 1e-12 {
		t.Errorf("autocoder_model_cost_total{model=big} = %v, want %v", got, res1.TotalCost)
	}
	spec := answerSpec()
	spec.Options.Model = "huge"
	reply, err := st.Client.SubmitRequest(ctx, messages.APIRequest{Spec: &spec})
	if err != nil || reply.Field != "spec.options.model" || !strings.Contains(reply.Error, "big, small") {
		t.Errorf("a model the table lacks: %+v, %v", reply, err)
	}
}

// counterValue is the value of a counter family's series whose one label is value.
func counterValue(t *testing.T, reg *prometheus.Registry, family, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return math.NaN()
}

// TestPythonVersionRefusedAtSubmit: a job asking for a Python version the
// deployment does not offer (AUTOCODER_PYTHONS) is refused at submit,
// over the message API and on the CLI, saying which versions there are; a
// job asking for one it offers runs.
func TestPythonVersionRefusedAtSubmit(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	cfg := testConfig(t, fake)
	cfg.Pythons = "3.11=" + python
	st := startLocal(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := answerSpec()
	spec.Options.Python = "3.12"
	reply, err := st.Client.SubmitRequest(ctx, messages.APIRequest{Spec: &spec})
	if err != nil || reply.Field != "spec.options.python" || reply.Kind != messages.ReplyInvalid || !strings.Contains(reply.Error, "3.11") {
		t.Errorf("python 3.12 over the API: %+v, %v", reply, err)
	}
	// Published on the jobs stream without the API, it fails at once with the reason.
	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, spec); err != nil {
		t.Fatal(err)
	}
	res, err := st.Client.Watch(ctx, id, nil)
	if err != nil || res.Success || !strings.Contains(res.Error, "options.python: Python 3.12 is not offered") || len(res.Stages) != 0 {
		t.Errorf("python 3.12 on the jobs stream: %v %+v", err, res)
	}
	spec.Options.Python = "3.11"
	if ok := runJob(t, st, spec); !ok.Success || ok.Spec.Options.Python != "3.11" {
		t.Errorf("python 3.11: %s", ok.Error)
	}

	jobFile := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(jobFile, []byte("prompt: Compute 6*7 as answer.\noutputs: {answer: int}\noptions: {python: '3.13'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cliCfg := testConfig(t, fake)
	cliCfg.Pythons = "3.11=" + python
	code, stdout, stderr := cli(t, cliCfg, "--local", jobFile)
	if code != submit.ExitUsage || !strings.Contains(stdout, "options.python: Python 3.13 is not offered by this deployment (versions: 3.11)") {
		t.Errorf("submit with python 3.13: exit %d: %s%s", code, stdout, stderr)
	}
}
