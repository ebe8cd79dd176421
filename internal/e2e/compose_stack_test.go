package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
)

// composeJob is the job the offline stack runs: the fake model's answer-42
// script, its tests passing at once.
const composeJob = "prompt: Compute the answer (42) and write it as the output answer.\noutputs: {answer: int}\noptions: {timeout: 120}\n"

// TestComposeStackOffline starts deploy/compose for real on the engine at
// DOCKER_HOST (Podman here), offline: a copy of deploy/compose, examples/
// and dashboards/ made as a checkout has them, then the README's
// "Secrets" and "Offline" blocks run as written (every image built from
// the local Debian base, compose.offline.yaml over compose.yaml). A job
// goes through it with the `submit` service (a job file of examples/, and
// one on stdin), the model being the fake one on this host; Prometheus
// has loaded the alert rules and scrapes the coordinator and the Redis
// exporter. Grafana and the NATS exporter have no offline image: the
// override leaves them out and TestComposeConfig validates them.
func TestComposeStackOffline(t *testing.T) {
	bin := requireCompose(t)
	host := composeEngine(t)
	start := time.Now()
	root := t.TempDir()
	repo := repoRoot(t)
	for _, dir := range []string{"deploy/compose", "examples", "dashboards"} {
		copyTree(t, filepath.Join(repo, dir), filepath.Join(root, dir))
	}
	os.MkdirAll(filepath.Join(root, "examples", "compose-e2e"), 0o755)
	os.WriteFile(filepath.Join(root, "examples", "compose-e2e", "job.yaml"), []byte(composeJob), 0o644)

	fake, err := fakellm.Listen("0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	scriptWithTests(fake, answerTests, sol(code("6 * 7")))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.Split(fake.URL(), "/v1")[0], "http://"))
	httpPort, promPort := freePort(t), freePort(t)
	project := "acstack" + randomHex(t)[:6]
	env := append(cleanComposeEnv(), "DOCKER_HOST="+host, "COMPOSE_PROJECT_NAME="+project, "AUTOCODER_SRC="+repo,
		fmt.Sprintf("AUTOCODER_HTTP_PORT=%d", httpPort), fmt.Sprintf("PROMETHEUS_PORT=%d", promPort), fmt.Sprintf("GRAFANA_PORT=%d", freePort(t)),
		"OPENAI_BASE_URL=http://host.containers.internal:"+port+"/v1")
	composeDir := filepath.Join(root, "deploy", "compose")
	compose := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, append([]string{"-f", "compose.yaml", "-f", "compose.offline.yaml"}, args...)...)
		cmd.Dir, cmd.Env = composeDir, env
		return cmd
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if t.Failed() {
			out, _ := compose(ctx, "logs", "--tail", "30").CombinedOutput()
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := compose(ctx, "down", "-v", "--remove-orphans").CombinedOutput(); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})

	readme, err := os.ReadFile(filepath.Join(repo, "deploy", "compose", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	for _, section := range []string{"## Secrets", "## Offline"} {
		block := shellBlock(t, string(readme), section)
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", block)
		cmd.Dir, cmd.Env = root, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("README %s, as written: %v\n%s\n%s", section, err, block, out)
		}
	}
	t.Logf("the stack is up after %s", time.Since(start).Round(time.Second))
	for _, secret := range []string{"nats_producer_password", "redis_password"} {
		b, _ := os.ReadFile(filepath.Join(composeDir, "secrets", secret))
		out, _ := compose(ctx, "config").CombinedOutput()
		if len(b) < 16 || strings.Contains(string(out), strings.TrimSpace(string(b))) {
			t.Errorf("secret %s: %d bytes, shown by compose config: %v", secret, len(b), strings.Contains(string(out), strings.TrimSpace(string(b))))
		}
	}

	// A job of examples/ through the stack, then the same job on stdin.
	run := compose(ctx, "run", "--rm", "-T", "submit", "submit", "compose-e2e/job.yaml", "-o", "json")
	out, err := run.Output()
	var res struct {
		Success bool           `json:"success"`
		JobID   string         `json:"job_id"`
		Outputs map[string]any `json:"outputs"`
	}
	if err != nil || json.Unmarshal(out, &res) != nil || !res.Success || res.Outputs["answer"] != 42.0 {
		t.Fatalf("submit through the stack: %v\n%s", err, out)
	}
	t.Logf("job %s through the stack after %s", res.JobID, time.Since(start).Round(time.Second))
	stdin := compose(ctx, "run", "--rm", "-T", "submit", "submit", "-", "--option", "max_iterations=2")
	stdin.Stdin = strings.NewReader(composeJob)
	if out, err := stdin.CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("a job on stdin through the stack: %v\n%s", err, out)
	}
	checkComposePrometheus(t, ctx, promPort)
	t.Logf("TestComposeStackOffline took %s", time.Since(start).Round(time.Second))
}

// composeEngine is the Docker-compatible engine to run the stack on
// (DOCKER_HOST, else the Podman socket scripts/setup-docker.sh starts);
// none answering fails the test in CI and skips it elsewhere.
func composeEngine(t *testing.T) string {
	t.Helper()
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///run/autocoder/podman.sock"
	}
	t.Setenv("DOCKER_HOST", host)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := docker.Ping(ctx, ""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no engine at %s: %v (scripts/setup-docker.sh)", host, err)
		}
		t.Skipf("no engine at %s: %v (scripts/setup-docker.sh)", host, err)
	}
	return host
}

// shellBlock is the first ```sh block after the heading section.
func shellBlock(t *testing.T, readme, section string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n"+section+"\n")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(after)
	if !ok || m == nil {
		t.Fatalf("README has no sh block under %q", section)
	}
	return m[1]
}

// checkComposePrometheus: the alert rules are loaded, and the coordinator
// and the Redis exporter are scraped.
func checkComposePrometheus(t *testing.T, ctx context.Context, port int) {
	t.Helper()
	base := fmt.Sprintf("http://127.0.0.1:%d/api/v1/", port)
	var rules struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name string `json:"name"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	getJSON(t, ctx, base+"rules", &rules)
	loaded := map[string]bool{}
	for _, g := range rules.Data.Groups {
		for _, r := range g.Rules {
			loaded[r.Name] = true
		}
	}
	for _, name := range alertNames(t) {
		if !loaded[name] {
			t.Errorf("Prometheus has not loaded alert %s (loaded: %v)", name, loaded)
		}
	}
	waitFor(t, 2*time.Minute, "Prometheus to scrape the coordinator and the Redis exporter", func() bool {
		var targets struct {
			Data struct {
				ActiveTargets []struct {
					Labels map[string]string `json:"labels"`
					Health string            `json:"health"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		getJSON(t, ctx, base+"targets", &targets)
		up := map[string]bool{}
		for _, tg := range targets.Data.ActiveTargets {
			if tg.Health == "up" {
				up[tg.Labels["job"]] = true
			}
		}
		if !up["coordinator"] || !up["redis"] {
			time.Sleep(2 * time.Second)
			return false
		}
		return true
	})
}

// alertNames are the alerts of dashboards/alerts.yml.
func alertNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "dashboards", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				names = append(names, r.Alert)
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("dashboards/alerts.yml has no alert")
	}
	return names
}

func getJSON(t *testing.T, ctx context.Context, url string, v any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, v) != nil {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
}

// copyTree copies the regular files under src to dst, leaving out what a
// checkout does not have (secrets, built binaries).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == "secrets" || rel == filepath.Join("offline", "bin") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || rel == "http-tokens" || rel == "prometheus-token" || rel == ".env" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}
