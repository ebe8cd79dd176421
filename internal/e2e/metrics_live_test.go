package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/pkg/messages"
)

// docMetricRow is a row of the metrics table of docs/operations.md.
var docMetricRow = regexp.MustCompile("(?m)^\\| `(autocoder_[a-z_]+)` \\| ([a-z]+) \\| (.*?) \\| (.*?) \\| (yes|no) \\|$")

// documentedFamilies reads the metrics table of docs/operations.md.
func documentedFamilies(t testing.TB) []metrics.Family {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []metrics.Family
	for _, m := range docMetricRow.FindAllStringSubmatch(string(b), -1) {
		f := metrics.Family{Name: m[1], Type: m[2], Binaries: strings.Split(m[4], ", "), AfterJob: m[5] == "yes"}
		for _, l := range strings.Split(m[3], ", ") {
			if l = strings.Trim(l, "`"); l != "—" {
				f.Labels = append(f.Labels, l)
			}
		}
		out = append(out, f)
	}
	return out
}

// TestMetricsTableIsDocumented: docs/operations.md lists exactly the
// families of internal/metrics, with their types, labels and binaries.
func TestMetricsTableIsDocumented(t *testing.T) {
	t.Parallel()
	if diff := cmpFamilies(metrics.Families, documentedFamilies(t)); diff != "" {
		t.Errorf("docs/operations.md metrics table vs internal/metrics.Families (-code +docs):\n%s", diff)
	}
}

func cmpFamilies(a, b []metrics.Family) string {
	as, _ := json.MarshalIndent(a, "", " ")
	bs, _ := json.MarshalIndent(b, "", " ")
	if bytes.Equal(as, bs) {
		return ""
	}
	return "code:\n" + string(as) + "\ndocs/operations.md:\n" + string(bs)
}

// requirePrometheus is Debian's prometheus binary; outside CI its absence
// skips, in CI it fails (scripts/setup.sh installs it).
func requirePrometheus(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("prometheus not found: run scripts/setup.sh (apt package prometheus)")
		}
		t.Skip("prometheus not found (apt package prometheus; scripts/setup.sh installs it)")
	}
	return p
}

// binaryEndpoints are where the live stack's binaries serve /metrics.
type binaryEndpoints struct {
	metrics map[string]string // binary -> host:port
	token   string            // the coordinator's read token
	monitor string            // the embedded NATS monitoring endpoint
	natsURL string
	creds   natsCreds
	bin     string
}

// startProcess starts a binary of bin with env, stopping it with SIGTERM
// when the test ends.
func startProcess(t *testing.T, path string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(append(cleanEnv(), env...), "AUTOCODER_STATE_DIR="+t.TempDir(), "AUTOCODER_LOG_LEVEL=warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop within 30s of SIGTERM\n%s", filepath.Base(path), logs.String())
		}
		if t.Failed() {
			t.Logf("%s logs:\n%s", filepath.Base(path), logs.String())
		}
	})
}

// startMetricsStack builds the binaries and starts coordinator --embedded
// (with the NATS monitoring endpoint), an llm-worker on fake and a
// sandbox-worker on the process backend, each serving /metrics on a known port.
func startMetricsStack(t *testing.T, fake *fakellm.Server) binaryEndpoints {
	t.Helper()
	e := binaryEndpoints{bin: t.TempDir(), token: "metrics-test-token-0123456789", metrics: map[string]string{}}
	build := exec.Command("go", "build", "-o", e.bin, "./cmd/...")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	natsPort, monPort := freePort(t), freePort(t)
	e.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	e.monitor = fmt.Sprintf("127.0.0.1:%d", monPort)
	for _, b := range []string{metrics.BinCoordinator, metrics.BinLLMWorker, metrics.BinSandboxWorker} {
		e.metrics[b] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("read "+e.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.creds = writeNATSUsers(t)
	startProcess(t, filepath.Join(e.bin, "coordinator"), []string{fmt.Sprintf("AUTOCODER_NATS_LISTEN=127.0.0.1:%d", natsPort),
		"AUTOCODER_HTTP_LISTEN=" + e.metrics[metrics.BinCoordinator], "AUTOCODER_HTTP_TOKENS_FILE=" + tokens,
		"AUTOCODER_NATS_USERS_FILE=" + e.creds.usersFile, "AUTOCODER_NATS_MONITOR_LISTEN=" + e.monitor}, "--embedded")
	waitListening(t, natsPort)
	startProcess(t, filepath.Join(e.bin, "llm-worker"), []string{"AUTOCODER_NATS_URL=" + e.natsURL, "OPENAI_BASE_URL=" + fake.URL(),
		"OPENAI_API_KEY=test", "AUTOCODER_NATS_USER=llm-1", "AUTOCODER_NATS_PASSWORD=llm-secret",
		"AUTOCODER_METRICS_LISTEN=" + e.metrics[metrics.BinLLMWorker]})
	startProcess(t, filepath.Join(e.bin, "sandbox-worker"), []string{"AUTOCODER_NATS_URL=" + e.natsURL, "AUTOCODER_PYTHON=" + python,
		"AUTOCODER_SANDBOX=process", "AUTOCODER_NATS_USER=sandbox-1", "AUTOCODER_NATS_PASSWORD_FILE=" + e.creds.sandboxPasswordFile,
		"AUTOCODER_METRICS_LISTEN=" + e.metrics[metrics.BinSandboxWorker]})
	for _, addr := range e.metrics {
		waitListening(t, portOf(t, addr))
	}
	return e
}

func portOf(t *testing.T, addr string) int {
	var port int
	if _, err := fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port); err != nil {
		t.Fatalf("port of %q: %v", addr, err)
	}
	return port
}

// submitJob runs the answer job through the submit binary.
func submitJob(t *testing.T, e binaryEndpoints) messages.Result {
	t.Helper()
	job := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(job, []byte("prompt: Compute the answer (42) and write it as the output answer.\noutputs: {answer: int}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	submit := exec.CommandContext(ctx, filepath.Join(e.bin, "submit"), "--json", job)
	submit.Env = append(cleanEnv(), "AUTOCODER_NATS_URL="+e.natsURL, "AUTOCODER_STATE_DIR="+t.TempDir(),
		"AUTOCODER_NATS_NKEY_FILE="+e.creds.producerSeedFile)
	var stdout, stderr bytes.Buffer
	submit.Stdout, submit.Stderr = &stdout, &stderr
	if err := submit.Run(); err != nil {
		t.Fatalf("submit: %v\nstderr:\n%s", err, stderr.String())
	}
	var res messages.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, stdout.String())
	}
	if !res.Success {
		t.Fatalf("job failed: %s", res.Error)
	}
	return res
}

// scrape reads a binary's /metrics.
func scrape(t *testing.T, addr, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape %s: %s\n%s", addr, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	return mfs
}

// nonZero reports whether a family has a sample other than zero (a
// histogram counts by its observations).
func nonZero(mf *dto.MetricFamily) bool {
	for _, m := range mf.GetMetric() {
		switch {
		case m.GetCounter().GetValue() != 0, m.GetGauge().GetValue() != 0, m.GetHistogram().GetSampleCount() != 0:
			return true
		}
	}
	return false
}

// labelsOf are the label names of a family's samples.
func labelsOf(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(out, l.GetName()) {
				out = append(out, l.GetName())
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkScrapes finds every documented family (docs/operations.md) on each binary that exposes it,
// with its labels, and a non-zero sample where a job must have made one.
func checkScrapes(t *testing.T, e binaryEndpoints) map[string]map[string]*dto.MetricFamily {
	t.Helper()
	scraped := map[string]map[string]*dto.MetricFamily{}
	for b, addr := range e.metrics {
		// The compose healthchecks probe /healthz on the same port, without
		// a token; /readyz says the binary's NATS, stores and cache answer.
		for _, probe := range []string{"/healthz", "/readyz"} {
			if resp, err := http.Get("http://" + addr + probe); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s: %v %v", b, probe, err, resp)
			} else {
				resp.Body.Close()
			}
		}
		token := ""
		if b == metrics.BinCoordinator {
			token = e.token
		}
		scraped[b] = scrape(t, addr, token)
	}
	for _, f := range documentedFamilies(t) {
		for _, b := range f.Binaries {
			mf, ok := scraped[b][f.Name]
			if !ok {
				t.Errorf("%s does not expose %s", b, f.Name)
				continue
			}
			if got := strings.ToLower(mf.GetType().String()); got != f.Type {
				t.Errorf("%s on %s is a %s, docs/operations.md says %s", f.Name, b, got, f.Type)
			}
			want := slices.Sorted(slices.Values(f.Labels))
			if got := labelsOf(mf); !slices.Equal(got, want) {
				t.Errorf("%s on %s has labels %v, docs/operations.md says %v", f.Name, b, got, want)
			}
			if f.AfterJob && !nonZero(mf) {
				t.Errorf("%s on %s is all zero after a job", f.Name, b)
			}
		}
	}
	if c := scraped[metrics.BinCoordinator][metrics.CoordinatorCASConflictsTotal]; c != nil {
		t.Logf("CAS conflicts after one job on one coordinator: %v", c.GetMetric()[0].GetCounter().GetValue())
	}
	return scraped
}

// sampleValue is the value of mf's sample with exactly labels (as
// name="value" pairs sorted by name); a histogram's is its count.
func sampleValue(mf *dto.MetricFamily, labels string) float64 {
	for _, m := range mf.GetMetric() {
		var pairs []string
		for _, l := range m.GetLabel() {
			pairs = append(pairs, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		slices.Sort(pairs)
		if strings.Join(pairs, ",") != labels {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return 0
}

func TestMetricsAfterJob(t *testing.T) {
	requireSandboxTools(t)
	promBin := requirePrometheus(t)
	fake := fakellm.New()
	defer fake.Close()
	// A logic bug fixed in the second iteration: a failed run, a diagnosis
	// and a fix (a repair route), then a passing run.
	scriptBasics(fake, sol(code("6 * 6")), sol(code("6 * 7")))
	fake.On("diagnosis", fakellm.JSON(messages.Diagnosis{Failures: []messages.Failure{{
		TestName: "test_answer", ErrorMessage: "assert 36 == 42", RootCause: "multiplies 6 by 6",
		SuggestedFix: "return 6 * 7", ErrorType: messages.ErrorLogic}}, NeedsPackages: []string{}, NeedsSystemPackages: []string{}}))
	fake.On("fix_verification", fakellm.JSON(messages.FixVerification{AllFixesApplied: true, MissingFixes: []string{}}))
	e := startMetricsStack(t, fake)
	prom := startPrometheus(t, promBin, e)
	res := submitJob(t, e)
	if res.Attempts != 2 {
		t.Errorf("attempts = %d, want 2 (stages %v)", res.Attempts, stageNames(&res))
	}
	scraped := checkScrapes(t, e)
	for _, want := range []struct {
		binary, family, labels string
		min                    float64
	}{
		{metrics.BinCoordinator, metrics.StagesDispatchedTotal, `stage="fix"`, 1},
		{metrics.BinCoordinator, metrics.JobsFinishedTotal, `outcome="passed",status="succeeded"`, 1},
		{metrics.BinCoordinator, metrics.JobIterations, ``, 1},
		{metrics.BinSandboxWorker, metrics.SandboxRunsTotal, `backend="process",outcome="failed"`, 1},
		{metrics.BinSandboxWorker, metrics.SandboxRunsTotal, `backend="process",outcome="passed"`, 1},
		{metrics.BinLLMWorker, metrics.ModelTokensTotal, `direction="input",model="gpt-4.1",stage="fix"`, 1},
		{metrics.BinLLMWorker, metrics.ModelCallsTotal, `model="gpt-4.1",outcome="ok",stage="diagnose"`, 1},
		{metrics.BinLLMWorker, metrics.CacheLookupsTotal, `layer="local",result="miss"`, 1},
	} {
		if got := sampleValue(scraped[want.binary][want.family], want.labels); got < want.min {
			t.Errorf("%s on %s{%s} = %v, want at least %v", want.family, want.binary, want.labels, got, want.min)
		}
	}
	checkNATSMonitor(t, e.monitor)
	checkDashboardsLive(t, prom)
	checkWorkersServeNoAPI(t, e, res.JobID)
}

// checkWorkersServeNoAPI: a worker's endpoint, open without tokens,
// serves its metrics and no job data: its NATS client could read any
// job's state, code and tests.
func checkWorkersServeNoAPI(t *testing.T, e binaryEndpoints, jobID string) {
	t.Helper()
	for _, b := range []string{metrics.BinLLMWorker, metrics.BinSandboxWorker} {
		for _, path := range []string{"/v1/jobs", "/v1/jobs/" + jobID, "/v1/jobs/" + jobID + "/iterations", "/v1/summaries"} {
			resp, err := http.Get("http://" + e.metrics[b] + path)
			if err != nil {
				t.Fatalf("%s %s: %v", b, path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s serves %s: %s, want 404 (a worker's endpoint carries no job data)", b, path, resp.Status)
			}
		}
	}
}

// checkNATSMonitor: the embedded server's monitoring endpoint answers.
func checkNATSMonitor(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/jsz")
	if err != nil {
		t.Fatalf("NATS monitoring: %v", err)
	}
	defer resp.Body.Close()
	var jsz struct {
		Streams int `json:"streams"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&jsz); err != nil || jsz.Streams == 0 {
		t.Errorf("NATS /jsz: %v, %d streams", err, jsz.Streams)
	}
}

// startPrometheus runs Debian's prometheus scraping the three binaries
// every second; it returns its HTTP API's base URL.
func startPrometheus(t *testing.T, promBin string, e binaryEndpoints) string {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(e.token), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: coordinator
    authorization: {credentials_file: %q}
    static_configs: [{targets: [%q]}]
  - job_name: llm-worker
    static_configs: [{targets: [%q]}]
  - job_name: sandbox-worker
    static_configs: [{targets: [%q]}]
`, tokenFile, e.metrics[metrics.BinCoordinator], e.metrics[metrics.BinLLMWorker], e.metrics[metrics.BinSandboxWorker])
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	startProcess(t, promBin, nil, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	waitListening(t, port)
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// promQuery runs expr at now through Prometheus's HTTP API and returns
// how many series it gave, or the API's error.
func promQuery(base, expr string) (int, error) {
	resp, err := http.PostForm(base+"/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s", r.Error)
	}
	return len(r.Data.Result), nil
}

// mayBeEmpty are the panels the test's job need not give data, and why.
var mayBeEmpty = map[string]string{
	"Stage errors / s, by stage": "no stage failed (a failing test run is a result, not a stage error)",
}

// checkDashboardsLive queries every dashboard expression on Prometheus
// until each has data (or, for mayBeEmpty panels, at least parses and runs).
func checkDashboardsLive(t *testing.T, prom string) {
	t.Helper()
	targets := dashboardTargets(t)
	pending := map[dashboardTarget]string{}
	for _, tg := range targets {
		pending[tg] = "not queried yet"
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for tg := range pending {
			n, err := promQuery(prom, tg.expr)
			switch {
			case err != nil:
				pending[tg] = "error: " + err.Error()
			case n == 0 && mayBeEmpty[tg.panel] == "":
				pending[tg] = "no data"
			default:
				delete(pending, tg)
			}
		}
		if len(pending) > 0 {
			time.Sleep(time.Second) // the next scrape
		}
	}
	for tg, why := range pending {
		t.Errorf("%s, %q: %s\n  %s", tg.file, tg.panel, why, tg.expr)
	}
	t.Logf("%d dashboard expressions ran on Prometheus with data (%d allowed empty)", len(targets), len(mayBeEmpty))
}
