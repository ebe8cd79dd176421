package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeSecrets are the variables compose.yaml once took its secrets
// from (they are files now): a developer's own must not leak into a test,
// and none may be needed.
var composeSecrets = []string{"NATS_COORDINATOR_PASSWORD=a", "NATS_LLM_WORKER_PASSWORD=b", "NATS_SANDBOX_WORKER_PASSWORD=c",
	"NATS_PRODUCER_PASSWORD=d", "NATS_TOOL_SERVER_PASSWORD=h", "REDIS_PASSWORD=e", "AUTOCODER_CACHE_KEYS=k1:c2VjcmV0", "OPENAI_API_KEY=f", "GRAFANA_ADMIN_PASSWORD=g"}

// requireCompose is the docker-compose binary (Debian's package); outside
// CI its absence skips, in CI it fails (scripts/setup.sh installs it).
func requireCompose(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("docker-compose")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("docker-compose not found: run scripts/setup.sh (apt package docker-compose)")
		}
		t.Skip("docker-compose not found (apt package docker-compose; scripts/setup.sh installs it)")
	}
	return p
}

// composeConfig runs `docker-compose config` on files with env and
// returns its output, or its error output.
func composeConfig(t *testing.T, bin string, env []string, files ...string) ([]byte, error) {
	t.Helper()
	args := []string{"--project-directory", filepath.Join(repoRoot(t), "deploy", "compose")}
	for _, f := range files {
		args = append(args, "-f", filepath.Join(repoRoot(t), "deploy", "compose", f))
	}
	cmd := exec.Command(bin, append(args, "config")...)
	cmd.Env = append(cleanComposeEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.Bytes(), err
	}
	return stdout.Bytes(), nil
}

// cleanComposeEnv is the environment without the compose variables (a
// developer's own must not hide a missing one).
func cleanComposeEnv() []string {
	var out []string
	for _, kv := range cleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(composeSecrets, func(s string) bool { return strings.HasPrefix(s, name+"=") }) &&
			!strings.HasPrefix(name, "COMPOSE_") && name != "GRAFANA_ADMIN_PASSWORD" {
			out = append(out, kv)
		}
	}
	return out
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       map[string]any    `yaml:"build"`
	Secrets     []any             `yaml:"secrets"`
	Command     []string          `yaml:"command"`
	Restart     string            `yaml:"restart"`
	Profiles    []string          `yaml:"profiles"`
	Privileged  bool              `yaml:"privileged"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Healthcheck struct {
		Test    []string `yaml:"test"`
		Disable bool     `yaml:"disable"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// TestComposeConfig validates deploy/compose with docker-compose's config
// command, alone and with the host-engine overlay, and checks what the
// deployment promises: healthchecks and restart policies, one image for the
// autocoder services, NATS with JetStream and monitoring, Redis with a
// password, sandbox workers on the Docker backend, Prometheus discovering
// every replica and Grafana with the dashboards.
func TestComposeConfig(t *testing.T) {
	t.Parallel()
	bin := requireCompose(t)
	out, err := composeConfig(t, bin, nil, "compose.yaml") // no variable needed: the secrets are files
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	var cfg struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("config output: %v\n%s", err, out)
	}
	s := cfg.Services
	for _, name := range []string{"nats", "redis", "coordinator", "llm-worker", "sandbox-worker", "docker", "prometheus", "grafana", "submit",
		"nats-exporter", "redis-exporter"} {
		if _, ok := s[name]; !ok {
			t.Errorf("no service %s", name)
		}
	}
	for name, svc := range s {
		if slices.Contains(svc.Profiles, "cli") {
			continue
		}
		// The NATS exporter's image is FROM scratch: no shell to check it
		// with; Prometheus's up{job="nats"} is its health.
		if len(svc.Healthcheck.Test) == 0 && (name != "nats-exporter" || !svc.Healthcheck.Disable) {
			t.Errorf("service %s has no healthcheck", name)
		}
		// Podman resolves no short name: every image names its registry.
		if first, _, _ := strings.Cut(svc.Image, "/"); !strings.ContainsAny(first, ".:") && first != "localhost" {
			t.Errorf("service %s: image %q is not fully qualified", name, svc.Image)
		}
		if svc.Build != nil && name != "coordinator" {
			t.Errorf("service %s builds an image: only the coordinator builds, the others run its image", name)
		}
		for k, v := range svc.Environment {
			if strings.Contains(k, "PASSWORD") && !strings.HasSuffix(k, "_FILE") || k == "OPENAI_API_KEY" || k == "AUTOCODER_CACHE_KEYS" ||
				strings.Contains(v, "redis://:") {
				t.Errorf("service %s has a secret in its environment: %s", name, k)
			}
		}
		if svc.Restart != "unless-stopped" {
			t.Errorf("service %s restarts %q, want unless-stopped", name, svc.Restart)
		}
	}
	for _, name := range []string{"llm-worker", "sandbox-worker", "submit"} {
		if s[name].Image != s["coordinator"].Image || s[name].Image == "" {
			t.Errorf("service %s runs image %q, the coordinator %q: want one image", name, s[name].Image, s["coordinator"].Image)
		}
	}
	checkComposeServices(t, s)

	if out, err := composeConfig(t, bin, composeSecrets, "compose.yaml", "compose.host-docker.yaml"); err != nil {
		t.Errorf("with compose.host-docker.yaml: %v\n%s", err, out)
	}
	if out, err := composeConfig(t, bin, nil, "compose.yaml", "compose.offline.yaml"); err != nil {
		t.Errorf("with compose.offline.yaml: %v\n%s", err, out)
	}
	checkPrometheusDiscovery(t)
}

func checkComposeServices(t *testing.T, s map[string]composeService) {
	t.Helper()
	// A docker sandbox on an engine elsewhere refuses to start without a
	// build network (docker.engineIsLocal).
	for name, svc := range s {
		host := svc.Environment["DOCKER_HOST"]
		local := host == "" || strings.HasPrefix(host, "unix://") || strings.Contains(host, "://127.0.0.1") || strings.Contains(host, "://localhost")
		if svc.Environment["AUTOCODER_SANDBOX"] == "docker" && !local && svc.Environment["AUTOCODER_DOCKER_BUILD_NETWORK"] == "" {
			t.Errorf("service %s: a docker sandbox on the engine at %s with no AUTOCODER_DOCKER_BUILD_NETWORK: it refuses to start", name, host)
		}
	}
	if c := strings.Join(s["nats"].Command, " "); !strings.Contains(c, "-js") || !strings.Contains(c, "-m 8222") {
		t.Errorf("nats runs %q, want JetStream (-js) and monitoring (-m 8222)", c)
	}
	if c := strings.Join(s["redis"].Command, " "); !strings.Contains(c, "requirepass") || !strings.Contains(c, "/run/secrets/redis_password") {
		t.Errorf("redis runs %q, want requirepass from the redis_password secret", c)
	}
	sw := s["sandbox-worker"]
	if sw.Environment["AUTOCODER_SANDBOX"] != "docker" || sw.Environment["DOCKER_HOST"] != "tcp://docker:2375" || sw.Privileged {
		t.Errorf("sandbox-worker: sandbox %q on %q, privileged %v; want the Docker backend on the docker service, unprivileged",
			sw.Environment["AUTOCODER_SANDBOX"], sw.Environment["DOCKER_HOST"], sw.Privileged)
	}
	if sw.DependsOn["docker"].Condition != "service_healthy" {
		t.Errorf("sandbox-worker does not wait for a healthy docker engine: %+v", sw.DependsOn)
	}
	if !slices.ContainsFunc(s["grafana"].Volumes, func(v string) bool {
		return strings.HasSuffix(strings.Split(v, ":")[0], "/dashboards") && strings.Contains(v, ":/var/lib/grafana/dashboards/autocoder")
	}) {
		t.Errorf("grafana does not mount dashboards/: %v", s["grafana"].Volumes)
	}
	if !slices.ContainsFunc(s["prometheus"].Volumes, func(v string) bool {
		return strings.HasSuffix(strings.Split(v, ":")[0], "/dashboards/alerts.yml") && strings.Contains(v, ":/etc/prometheus/alerts.yml")
	}) {
		t.Errorf("prometheus does not mount dashboards/alerts.yml beside its prometheus.yml: %v", s["prometheus"].Volumes)
	}
	prov, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "grafana", "provisioning", "dashboards", "autocoder.yaml"))
	if err != nil || !strings.Contains(string(prov), "path: /var/lib/grafana/dashboards/autocoder") {
		t.Errorf("grafana's dashboard provisioning does not read the mounted dashboards: %v\n%s", err, prov)
	}
}

// checkPrometheusDiscovery: every autocoder service is a scrape job found
// by DNS on its compose service name, so every replica is scraped.
func checkPrometheusDiscovery(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
			DNS     []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.RuleFiles, "alerts.yml") {
		t.Errorf("prometheus.yml loads rule files %v, want alerts.yml (dashboards/alerts.yml, mounted beside it)", cfg.RuleFiles)
	}
	ports := map[string]int{"coordinator": 8080, "llm-worker": 9100, "sandbox-worker": 9100}
	if !bytes.Contains(b, []byte(`"nats-exporter:7777"`)) || !bytes.Contains(b, []byte(`"redis-exporter:9121"`)) || !bytes.Contains(b, []byte("rule_files: [alerts.yml]")) {
		t.Errorf("prometheus.yml does not scrape the NATS and Redis exporters or load the alert rules")
	}
	for _, sc := range cfg.ScrapeConfigs {
		for _, d := range sc.DNS {
			if len(d.Names) == 1 && d.Type == "A" && ports[d.Names[0]] == d.Port {
				delete(ports, d.Names[0])
			}
		}
	}
	if len(ports) > 0 {
		t.Errorf("prometheus.yml discovers no replicas of %v by DNS", ports)
	}
	// Prometheus's own check, with the token secret where the test can make it.
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found: run scripts/setup.sh (apt package prometheus)")
		}
		t.Skip("promtool not found (apt package prometheus)")
	}
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	local := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(token, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, bytes.ReplaceAll(b, []byte("/run/secrets/prometheus_token"), []byte(token)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The alert rules, mounted beside it as compose.yaml does.
	rules, err := os.ReadFile(filepath.Join(repoRoot(t), "dashboards", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.yml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", local).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("rules found")) {
		t.Errorf("promtool check config prometheus.yml (with its alert rules): %v\n%s", err, out)
	}
}
