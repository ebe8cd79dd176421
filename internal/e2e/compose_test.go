package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
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
	User        string            `yaml:"user"`
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
	s := composeServices(t, bin, nil, "compose.yaml") // no variable needed: the secrets are files
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
	checkComposeImages(t, "compose.yaml", s)
	checkComposeEngineTLS(t, s)
	checkComposeNATSVersion(t, s["nats"].Image)

	// The overlays, merged as `up` merges them: their images are fully
	// qualified too, and the sandbox workers speak to the engine each
	// overlay leaves them.
	host := composeServices(t, bin, composeSecrets, "compose.yaml", "compose.host-docker.yaml")
	checkComposeImages(t, "compose.yaml with compose.host-docker.yaml", host)
	checkComposeHostEngine(t, host)
	offline := composeServices(t, bin, nil, "compose.yaml", "compose.offline.yaml")
	checkComposeImages(t, "compose.yaml with compose.offline.yaml", offline)
	if env := offline["sandbox-worker"].Environment; env["AUTOCODER_SANDBOX"] != "process" || env["DOCKER_HOST"] != "" || env["DOCKER_CERT_PATH"] != "" {
		t.Errorf("offline sandbox-worker: sandbox %q, DOCKER_HOST %q, DOCKER_CERT_PATH %q; want the process backend and no engine",
			env["AUTOCODER_SANDBOX"], env["DOCKER_HOST"], env["DOCKER_CERT_PATH"])
	}
	checkComposeModel(t, bin, s)
	checkPrometheusDiscovery(t)
}

// composeServices is the services of `docker-compose config` on files.
func composeServices(t *testing.T, bin string, env []string, files ...string) map[string]composeService {
	t.Helper()
	out, err := composeConfig(t, bin, env, files...)
	if err != nil {
		t.Fatalf("docker-compose config %v: %v\n%s", files, err, out)
	}
	var cfg struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("config output of %v: %v\n%s", files, err, out)
	}
	return cfg.Services
}

// checkComposeImages: Podman resolves no short name, so every image names
// its registry (localhost for the ones the stack builds).
func checkComposeImages(t *testing.T, what string, s map[string]composeService) {
	t.Helper()
	for name, svc := range s {
		if first, _, _ := strings.Cut(svc.Image, "/"); !strings.Contains(svc.Image, "/") || !strings.ContainsAny(first, ".:") && first != "localhost" {
			t.Errorf("%s: service %s: image %q is not fully qualified", what, name, svc.Image)
		}
	}
}

// checkComposeEngineTLS: the Docker-in-Docker engine's API takes client
// certificates, and only the sandbox workers hold one. Image builds run on
// the engine's bridge network, whose gateway is the engine: a plain API
// there would let a package's setup.py start a privileged container. The
// image's entrypoint adds --host and the TLS flags itself (with
// DOCKER_TLS_CERTDIR set), so the service adds no --host of its own: dockerd
// would get the address twice and not start.
func checkComposeEngineTLS(t *testing.T, s map[string]composeService) {
	t.Helper()
	d, sw := s["docker"], s["sandbox-worker"]
	certDir := d.Environment["DOCKER_TLS_CERTDIR"]
	if certDir == "" {
		t.Errorf("docker: DOCKER_TLS_CERTDIR is empty: the engine serves its API without TLS")
		return
	}
	for _, arg := range d.Command {
		if strings.HasPrefix(arg, "--host") || arg == "-H" || strings.HasPrefix(arg, "--tls") {
			t.Errorf("docker: command %q repeats what the dind entrypoint adds (--host, --tls*): dockerd fails on the doubled address", d.Command)
		}
	}
	all := strings.Join(append(append(append([]string{}, d.Command...), d.Healthcheck.Test...), sw.Environment["DOCKER_HOST"]), " ")
	if strings.Contains(all, "2375") {
		t.Errorf("docker: the plain API port 2375 is still used: %s", all)
	}
	if hc := strings.Join(d.Healthcheck.Test, " "); !strings.Contains(hc, "--tlsverify") || !strings.Contains(hc, "tcp://127.0.0.1:2376") {
		t.Errorf("docker: healthcheck %q does not check the TLS API on 2376", hc)
	}
	// The volumes of the CA and of the client certificate, by their mount
	// point in the engine.
	vol := map[string]string{}
	for _, v := range d.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			vol[parts[1]] = parts[0]
		}
	}
	caVol, clientVol := vol[certDir+"/ca"], vol[certDir+"/client"]
	if caVol == "" || clientVol == "" {
		t.Errorf("docker: volumes %v: want volumes at %s/ca (the CA, kept) and %s/client (shared with the sandbox workers)", d.Volumes, certDir, certDir)
		return
	}
	if env := sw.Environment; env["DOCKER_HOST"] != "tcp://docker:2376" || env["DOCKER_TLS_VERIFY"] != "1" || env["DOCKER_CERT_PATH"] == "" {
		t.Errorf("sandbox-worker: DOCKER_HOST %q, DOCKER_TLS_VERIFY %q, DOCKER_CERT_PATH %q; want the engine's TLS API, verified, with a client certificate",
			env["DOCKER_HOST"], env["DOCKER_TLS_VERIFY"], env["DOCKER_CERT_PATH"])
	}
	if !slices.Contains(sw.Volumes, clientVol+":"+sw.Environment["DOCKER_CERT_PATH"]+":ro") {
		t.Errorf("sandbox-worker: volumes %v do not mount %s read-only at DOCKER_CERT_PATH %s", sw.Volumes, clientVol, sw.Environment["DOCKER_CERT_PATH"])
	}
	for name, svc := range s {
		for _, v := range svc.Volumes {
			src := strings.Split(v, ":")[0]
			if name != "docker" && src == caVol || name != "docker" && name != "sandbox-worker" && src == clientVol {
				t.Errorf("service %s mounts the engine's %s: only the engine holds the CA, only the sandbox workers a client key", name, v)
			}
		}
	}
}

// checkComposeHostEngine: with compose.host-docker.yaml the sandbox
// workers reach the host's engine through the relay, which listens where
// they connect and speaks no TLS.
func checkComposeHostEngine(t *testing.T, s map[string]composeService) {
	t.Helper()
	env := s["sandbox-worker"].Environment
	listen := strings.Join(s["docker"].Command, " ")
	_, port, _ := strings.Cut(strings.TrimPrefix(env["DOCKER_HOST"], "tcp://"), ":")
	if !strings.HasPrefix(env["DOCKER_HOST"], "tcp://docker:") || !strings.Contains(listen, "tcp-listen:"+port+",") {
		t.Errorf("host engine: the sandbox workers connect to %q, the relay runs %q", env["DOCKER_HOST"], listen)
	}
	if env["DOCKER_TLS_VERIFY"] != "" || env["DOCKER_CERT_PATH"] != "" {
		t.Errorf("host engine: DOCKER_TLS_VERIFY %q, DOCKER_CERT_PATH %q: the relay speaks no TLS", env["DOCKER_TLS_VERIFY"], env["DOCKER_CERT_PATH"])
	}
	if s["docker"].Privileged {
		t.Error("host engine: the relay is privileged")
	}
}

// minNATSMinor is the oldest nats-server 2.x the coordinator provisions
// on: the events stream's asynchronous persist mode came in 2.12
// (internal/bus/provision.go; docs/operations.md, "The NATS server").
const minNATSMinor = 12

func checkComposeNATSVersion(t *testing.T, image string) {
	t.Helper()
	m := regexp.MustCompile(`/nats:2\.(\d+)[.-]`).FindStringSubmatch(image)
	if m == nil {
		t.Errorf("nats image %q: no 2.x version tag to check", image)
		return
	}
	if minor, _ := strconv.Atoi(m[1]); minor < minNATSMinor {
		t.Errorf("nats image %q: older than 2.%d, which the events stream's persist mode needs", image, minNATSMinor)
	}
}

// checkComposeModel: the coordinator and the llm-workers take the model's
// name from compose's environment, with the default the binaries have, so
// an endpoint at OPENAI_BASE_URL can be named without editing the file.
func checkComposeModel(t *testing.T, bin string, s map[string]composeService) {
	t.Helper()
	var def string
	if os.Getenv("AUTOCODER_MODEL") == "" {
		def = config.FromEnv().Model
	}
	for _, name := range []string{"coordinator", "llm-worker"} {
		if got := s[name].Environment["AUTOCODER_MODEL"]; got == "" || def != "" && got != def {
			t.Errorf("service %s: AUTOCODER_MODEL %q by default, want %q (internal/config's)", name, got, def)
		}
	}
	set := composeServices(t, bin, []string{"AUTOCODER_MODEL=qwen2.5-coder-32b", "OPENAI_BASE_URL=http://vllm.internal:8000/v1"}, "compose.yaml")
	for _, name := range []string{"coordinator", "llm-worker"} {
		if got := set[name].Environment["AUTOCODER_MODEL"]; got != "qwen2.5-coder-32b" {
			t.Errorf("service %s: AUTOCODER_MODEL=qwen2.5-coder-32b in the environment gives %q", name, got)
		}
	}
	if got := set["llm-worker"].Environment["OPENAI_BASE_URL"]; got != "http://vllm.internal:8000/v1" {
		t.Errorf("llm-worker: OPENAI_BASE_URL %q", got)
	}
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
	if sw.Environment["AUTOCODER_SANDBOX"] != "docker" || !strings.HasPrefix(sw.Environment["DOCKER_HOST"], "tcp://docker:") || sw.Privileged {
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

// TestComposeDockerTLS: the sandbox workers' Docker client, given the
// environment compose.yaml gives them (DOCKER_HOST, DOCKER_TLS_VERIFY,
// DOCKER_CERT_PATH), speaks TLS with its client certificate to an engine
// that requires one, as the dind engine does with --tlsverify; without
// the certificate it gets nowhere. client.FromEnv reads the variables, and
// the host passed on from DOCKER_HOST keeps the TLS transport.
func TestComposeDockerTLS(t *testing.T) {
	bin := requireCompose(t)
	env := composeServices(t, bin, nil, "compose.yaml")["sandbox-worker"].Environment
	if env["DOCKER_TLS_VERIFY"] == "" || env["DOCKER_CERT_PATH"] == "" {
		t.Fatalf("sandbox-worker: DOCKER_TLS_VERIFY %q, DOCKER_CERT_PATH %q: no TLS to test", env["DOCKER_TLS_VERIFY"], env["DOCKER_CERT_PATH"])
	}
	certs, serverTLS := dindCerts(t)
	var pings atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			pings.Add(1)
			w.Header().Set("Api-Version", "1.45")
			io.WriteString(w, "OK")
			return
		}
		http.NotFound(w, r)
	}))
	srv.TLS = serverTLS
	srv.StartTLS()
	defer srv.Close()
	host := "tcp://" + srv.Listener.Addr().String()

	t.Setenv("DOCKER_HOST", host)
	t.Setenv("DOCKER_TLS_VERIFY", env["DOCKER_TLS_VERIFY"])
	t.Setenv("DOCKER_CERT_PATH", certs) // compose.yaml's mount point, here
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// "" is DOCKER_HOST; the worker passes its --docker-host (DOCKER_HOST) on.
	for _, h := range []string{"", host} {
		if err := docker.Ping(ctx, h); err != nil {
			t.Errorf("Ping(%q) with the client certificate: %v", h, err)
		}
	}
	if pings.Load() == 0 {
		t.Error("the engine saw no ping")
	}
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_TLS_VERIFY", "")
	if err := docker.Ping(ctx, ""); err == nil {
		t.Error("Ping without the client certificate reached the engine")
	}
}

// dindCerts makes what the dind entrypoint makes: a CA, a server
// certificate (here for 127.0.0.1) and a client certificate, the client's
// ca.pem, cert.pem and key.pem in a directory (returned), and the server's
// TLS configuration, which requires a client certificate of the CA.
func dindCerts(t *testing.T) (string, *tls.Config) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := newKey()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test dind CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(cryptorand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		der, err := x509.CreateCertificate(cryptorand.Reader, &x509.Certificate{SerialNumber: big.NewInt(serial),
			Subject: pkix.Name{CommonName: "test dind"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf("EC PRIVATE KEY", der)
	}
	serverDER, serverKey := issue(2, x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	clientDER, clientKey := issue(3, x509.ExtKeyUsageClientAuth, nil)
	dir := t.TempDir()
	for name, b := range map[string][]byte{"ca.pem": pemOf("CERTIFICATE", caDER), "cert.pem": pemOf("CERTIFICATE", clientDER), "key.pem": keyPEM(clientKey)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.X509KeyPair(pemOf("CERTIFICATE", serverDER), keyPEM(serverKey))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return dir, &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
}

// TestComposeBuildContext: compose.yaml builds the root Dockerfile with
// the repository as context, and `COPY . .` copies whatever the context
// holds into the build stage. The root .dockerignore, applied as
// docker-compose applies it (docker-py's exclude_paths, run by the
// Python docker-compose runs on), lets in every file `go build ./cmd/...`
// reads and keeps out deploy/compose's secrets and tokens, .git, .state
// and built binaries.
func TestComposeBuildContext(t *testing.T) {
	t.Parallel()
	bin := requireCompose(t)
	python := "python3"
	if b, err := os.ReadFile(bin); err == nil {
		if line, _, _ := strings.Cut(string(b), "\n"); strings.HasPrefix(line, "#!/") && strings.Contains(line, "python") {
			python = strings.Fields(strings.TrimPrefix(line, "#!"))[0]
		}
	}
	root := repoRoot(t)
	// What the build reads: go.mod, go.sum and the module's packages
	// (Go files and embedded files) that ./cmd/... needs.
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if .Module}}{{if eq .Module.Path "github.com/autocoder/autocoder"}}{{.Dir}}{{range .GoFiles}}|{{.}}{{end}}{{range .EmbedFiles}}|{{.}}{{end}}{{end}}{{end}}`, "./cmd/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	needed := []string{"go.mod", "go.sum"}
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSpace(line), "|")
		if len(fields) < 2 {
			continue
		}
		dir, _ := filepath.Rel(root, fields[0])
		for _, f := range fields[1:] {
			needed = append(needed, filepath.ToSlash(filepath.Join(dir, f)))
		}
	}
	if len(needed) < 50 {
		t.Fatalf("go list found only %d files: %v", len(needed), needed)
	}
	secret := []string{"deploy/compose/secrets/redis_password", "deploy/compose/http-tokens", "deploy/compose/prometheus-token",
		"deploy/compose/.env", ".git/config", ".state/cache-key", "deploy/compose/offline/bin/coordinator", "bin/coordinator",
		"internal/e2e/e2e.test", "python/.mypy_cache/x.json", "internal/sandbox/__pycache__/warmrun.cpython-311.pyc", ".env", "examples/x/job.yaml"}
	// A tree of empty files at those paths, and the real .dockerignore.
	tree := t.TempDir()
	for _, f := range append(append([]string{"Dockerfile"}, needed...), secret...) {
		p := filepath.Join(tree, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatalf("no .dockerignore at the root: %v", err)
	}
	if err := os.WriteFile(filepath.Join(tree, ".dockerignore"), ignore, 0o644); err != nil {
		t.Fatal(err)
	}
	// docker-py's APIClient.build: the lines, stripped, without blanks and comments.
	script := `import sys
from docker.utils.build import exclude_paths
root = sys.argv[1]
with open(root + "/.dockerignore") as f:
    patterns = [l.strip() for l in f.read().splitlines()]
patterns = [p for p in patterns if p and p[0] != "#"]
for p in sorted(exclude_paths(root, patterns, dockerfile="Dockerfile")):
    print(p)
`
	py := exec.Command(python, "-c", script, tree)
	var stderr bytes.Buffer
	py.Stderr = &stderr
	out, err = py.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "No module named") {
			t.Skipf("%s has no docker-py: %s", python, stderr.String())
		}
		t.Fatalf("%s exclude_paths: %v\n%s", python, err, stderr.String())
	}
	sent := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		sent[strings.TrimSpace(line)] = true
	}
	for _, f := range needed {
		if !sent[f] {
			t.Errorf("the build needs %s, and .dockerignore keeps it out of the context", f)
		}
	}
	for _, f := range secret {
		if sent[f] {
			t.Errorf("%s goes into the build context", f)
		}
	}
}

// TestComposeSecretsBlock runs deploy/compose/README.md's "Secrets" block
// as written in an empty copy of the layout, and checks what it made: the
// secrets directory closed to other users, each secret readable by the
// services' users and nobody else where that can be had. prometheus-token,
// outside it, holds a token that reads every job: it is Prometheus's
// alone (compose.yaml runs the image's user, nobody: uid 65534).
func TestComposeSecretsBlock(t *testing.T) {
	t.Parallel()
	bin := requireCompose(t)
	if os.Geteuid() != 0 {
		t.Skip("the block gives prometheus-token to uid 65534, which takes root")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("no openssl")
	}
	if u := composeServices(t, bin, nil, "compose.yaml")["prometheus"].User; u != "" {
		t.Errorf("prometheus runs as %q: the README gives its token to uid 65534, the image's nobody", u)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "deploy", "compose"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", shellBlock(t, string(readme), "## Secrets"))
	cmd.Dir, cmd.Env = root, cleanComposeEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Secrets block: %v\n%s", err, out)
	}
	dir := filepath.Join(root, "deploy", "compose")
	want := map[string]struct {
		mode os.FileMode
		uid  uint32
	}{
		"secrets":                        {0o700, 0},
		"secrets/redis_password":         {0o644, 0},
		"secrets/grafana_admin_password": {0o644, 0},
		"secrets/cache_keys":             {0o600, 0},
		"secrets/openai_api_key":         {0o600, 0},
		"http-tokens":                    {0o600, 0},
		"prometheus-token":               {0o400, 65534},
	}
	for name, w := range want {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		st, _ := info.Sys().(*syscall.Stat_t)
		if info.Mode().Perm() != w.mode || st == nil || st.Uid != w.uid {
			t.Errorf("%s: mode %v, owner %v; want %v, uid %d", name, info.Mode().Perm(), st.Uid, w.mode, w.uid)
		}
	}
}

// TestOperationsNamesEveryStore: docs/operations.md's
// AUTOCODER_NATS_STORE_REPLICAS row (under "Replicas") names every store
// the setting takes.
func TestOperationsNamesEveryStore(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "| `AUTOCODER_NATS_STORE_REPLICAS`") && strings.Contains(line, "names:") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/operations.md has no AUTOCODER_NATS_STORE_REPLICAS row")
	}
	for _, name := range bus.StoreNames() {
		if !strings.Contains(row, "`"+name+"`") {
			t.Errorf("docs/operations.md's AUTOCODER_NATS_STORE_REPLICAS row does not name %s", name)
		}
	}
}
