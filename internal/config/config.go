package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Config holds the settings of Contract 6 (docs/contracts.md), shared by every binary. Each one
// comes from its environment variable and can be overridden by a flag of the
// same meaning (see Register).
type Config struct {
	OpenAIBaseURL string // OPENAI_BASE_URL; default: OpenAI
	OpenAIAPIKey  string // OPENAI_API_KEY
	Model         string // AUTOCODER_MODEL; default gpt-4.1
	NATSURL       string // AUTOCODER_NATS_URL; empty: embedded server
	NATSListen    string // AUTOCODER_NATS_LISTEN; default 127.0.0.1:4222 (coordinator --embedded)
	RedisURL      string // AUTOCODER_REDIS_URL; empty: embedded cache
	StateDir      string // AUTOCODER_STATE_DIR; default a per-user state dir
	Sandbox       string // AUTOCODER_SANDBOX: docker|process; empty: docker if an engine answers, else process
	DockerHost    string // DOCKER_HOST
	// DockerBaseImage is what the docker backend builds environments FROM
	// (AUTOCODER_DOCKER_BASE_IMAGE); empty: python:3.12-slim, pulled when missing.
	DockerBaseImage string
	// DockerRuntime is the OCI runtime of sandbox containers, e.g. runsc
	// (AUTOCODER_DOCKER_RUNTIME); empty: the engine's default.
	DockerRuntime string
	// DockerPoolSize is the number of pre-started sandboxes per hot image
	// (AUTOCODER_DOCKER_POOL_SIZE); 0: the default (2), negative: none.
	DockerPoolSize int
	// DockerExtraCommands are shell commands run as root, in order, in every
	// docker sandbox image build (AUTOCODER_DOCKER_EXTRA_COMMANDS, one per
	// line): the operator's trusted setup, part of the image name.
	DockerExtraCommands string
	// WarmRunner is AUTOCODER_WARM_RUNNER, on or off (default on): the
	// sandbox runs pytest, scripts and python -c in a child of a warm
	// interpreter per environment (docs/sandbox.md) instead of a fresh one.
	WarmRunner    string
	HTTPListen    string // AUTOCODER_HTTP_LISTEN; default 127.0.0.1:8080
	MetricsListen string // AUTOCODER_METRICS_LISTEN; default 127.0.0.1:0
	Python        string // AUTOCODER_PYTHON: the sandbox's interpreter; default /usr/bin/python3
	PipIndexURL   string // AUTOCODER_PIP_INDEX_URL: package index for sandbox environments
	PipFindLinks  string // AUTOCODER_PIP_FIND_LINKS: local wheel folders, comma separated
	Concurrency   int    // AUTOCODER_CONCURRENCY: stages a worker runs at once; default 4 (llm) / 2 (sandbox)
	LogLevel      string // AUTOCODER_LOG_LEVEL: debug|info|warn|error; default info
	LogFormat     string // AUTOCODER_LOG_FORMAT: text|json; default text (logging.go)
	WorkerName    string // AUTOCODER_WORKER_NAME; default host name and pid
	// Transcript is a scripted model transcript the llm-worker replays
	// instead of calling a model (AUTOCODER_TRANSCRIPT, or its --transcript):
	// the offline demo of separate processes. Only ever set explicitly.
	Transcript string

	// NATSMonitorListen serves the embedded NATS server's monitoring
	// endpoint (AUTOCODER_NATS_MONITOR_LISTEN, monitor.go); empty: off.
	NATSMonitorListen string

	// The sandbox-worker's ceilings on one run, whatever its command asks
	// (see Ceilings, ceilings.go). Empty: the default.
	MaxRunTimeout  string // AUTOCODER_MAX_RUN_TIMEOUT: a Go duration; default 30m
	MaxMemory      string // AUTOCODER_MAX_MEMORY: a quantity such as 8Gi; default 8Gi
	MaxCPUs        string // AUTOCODER_MAX_CPUS: a number of cores; default the machine's
	MaxOutputFiles string // AUTOCODER_MAX_OUTPUT_FILES: entries a run returns from /var/outputs; default 10000
	MaxOutputBytes string // AUTOCODER_MAX_OUTPUT_BYTES: bytes a run returns from /var/outputs, at most 64Mi; default 64Mi
	DiskQuota      string // AUTOCODER_SANDBOX_DISK_QUOTA: what a run may write to /workspace and to /var/outputs each; default 256Mi

	// The llm-worker's bounds on one model call (see Bounds, modelbounds.go).
	MaxReplyBytes  string // AUTOCODER_MAX_REPLY_BYTES: a quantity such as 4Mi; default 4Mi
	MaxPromptBytes string // AUTOCODER_MAX_PROMPT_BYTES: a quantity such as 256Ki; default 256Ki
	// ContextBytes (AUTOCODER_CONTEXT_BYTES) is how much of a job's
	// documentation one prompt holds before chunks are retrieved; default 24Ki.
	ContextBytes string
	// DockerBuildNetwork, when set (AUTOCODER_DOCKER_BUILD_NETWORK), is the
	// network pip runs on in the docker backend's image builds, instead of a
	// container with no network behind the worker's egress proxy: for an
	// engine on another machine, which cannot reach the proxy's socket.
	// Builds are then only as confined as that network.
	DockerBuildNetwork string

	// CacheKeys are the HMAC keys of the stage cache (AUTOCODER_CACHE_KEYS),
	// "id:base64secret[,id:base64secret...]": the first signs, all verify.
	// A secret: never logged, never shown as a flag default. Only workers
	// read it (see CacheKeyring).
	CacheKeys string
	// CacheKeyFile is a file holding CacheKeys' format, one key a line or
	// comma separated (AUTOCODER_CACHE_KEY_FILE), so the secret need not be
	// in the environment. At most one of CacheKeys and CacheKeyFile is set.
	CacheKeyFile string
	// CacheUnsigned lets a worker use a Redis cache without a key
	// (AUTOCODER_CACHE_UNSIGNED=true): anyone who can write to the Redis
	// can then hand workers forged results. A value strconv.ParseBool does
	// not read is an error (Validate).
	CacheUnsigned bool
	// CacheTTL is how long the stage cache keeps a result
	// (AUTOCODER_CACHE_TTL, a duration; default DefaultCacheTTL; 0 keeps
	// them for ever). Content-addressed keys are seldom read again, so
	// without one a shared Redis grows until it refuses writes (and with
	// them the in-flight claims), and the embedded cache until the disk
	// is full.
	CacheTTL time.Duration
	// StageDeadlines overrides the coordinator's stage deadlines
	// (AUTOCODER_STAGE_DEADLINES), e.g. "build=45m,plan=5m": how long a
	// dispatched stage may wait for its result before its job fails with
	// the reason. Stages not named keep their defaults (coordinator.StageDeadline).
	StageDeadlines string
	// Access to the HTTP API and to Redis (docs/security.md).

	// HTTPTokensFile holds the HTTP API's bearer tokens, one a line: "scope
	// token" or "name:scope:token" (AUTOCODER_HTTP_TOKENS_FILE).
	HTTPTokensFile string
	// HTTPAuth is "token" (the default when empty) or "none": an API open to
	// whoever reaches it, logged as a warning (AUTOCODER_HTTP_AUTH).
	HTTPAuth string
	// HTTPAllowedHosts are Host names the API answers besides the listen
	// host, localhost and IP literals, comma separated (AUTOCODER_HTTP_ALLOWED_HOSTS).
	HTTPAllowedHosts string
	// RedisTLSCA is a PEM file of the CAs that sign a rediss:// server's
	// certificate (AUTOCODER_REDIS_TLS_CA); empty: the system's roots.
	RedisTLSCA string
	// RedisTLSCert and RedisTLSKey are a client certificate and key for a
	// Redis that requires one (AUTOCODER_REDIS_TLS_CERT, AUTOCODER_REDIS_TLS_KEY).
	RedisTLSCert, RedisTLSKey string
	NATSAuthConfig            // NATS credentials, TLS and the embedded server's users (natsauth.go)
	FleetConfig               // replicas, store bounds, sync, HTTP connection limits (fleet.go)
	JobSettingsConfig         // models, Python versions and secrets behind the per-job settings (jobsettings.go)

	// envErrs are the settings FromEnv could not read; Validate reports them.
	envErrs []error
}

// HTTP authentication modes (AUTOCODER_HTTP_AUTH).
const (
	HTTPAuthToken = "token"
	HTTPAuthNone  = "none"
)

// FromEnv reads the environment.
func FromEnv() Config {
	c := Config{
		OpenAIBaseURL:       os.Getenv("OPENAI_BASE_URL"),
		OpenAIAPIKey:        os.Getenv("OPENAI_API_KEY"),
		Model:               env("AUTOCODER_MODEL", "gpt-4.1"),
		NATSURL:             os.Getenv("AUTOCODER_NATS_URL"),
		NATSListen:          env("AUTOCODER_NATS_LISTEN", "127.0.0.1:4222"),
		RedisURL:            os.Getenv("AUTOCODER_REDIS_URL"),
		StateDir:            env("AUTOCODER_STATE_DIR", defaultStateDir()),
		Sandbox:             os.Getenv("AUTOCODER_SANDBOX"),
		DockerHost:          os.Getenv("DOCKER_HOST"),
		DockerBaseImage:     os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE"),
		DockerRuntime:       os.Getenv("AUTOCODER_DOCKER_RUNTIME"),
		DockerExtraCommands: os.Getenv("AUTOCODER_DOCKER_EXTRA_COMMANDS"),
		WarmRunner:          env("AUTOCODER_WARM_RUNNER", "on"),
		HTTPListen:          env("AUTOCODER_HTTP_LISTEN", "127.0.0.1:8080"),
		MetricsListen:       env("AUTOCODER_METRICS_LISTEN", "127.0.0.1:0"),
		Python:              env("AUTOCODER_PYTHON", "/usr/bin/python3"),
		PipIndexURL:         os.Getenv("AUTOCODER_PIP_INDEX_URL"),
		PipFindLinks:        os.Getenv("AUTOCODER_PIP_FIND_LINKS"),
		LogLevel:            env("AUTOCODER_LOG_LEVEL", "info"),
		LogFormat:           env("AUTOCODER_LOG_FORMAT", LogFormatText),
		WorkerName:          os.Getenv("AUTOCODER_WORKER_NAME"),
		Transcript:          os.Getenv("AUTOCODER_TRANSCRIPT"),
		CacheKeys:           os.Getenv("AUTOCODER_CACHE_KEYS"),
		CacheKeyFile:        os.Getenv("AUTOCODER_CACHE_KEY_FILE"),
		StageDeadlines:      os.Getenv("AUTOCODER_STAGE_DEADLINES"),
		HTTPTokensFile:      os.Getenv("AUTOCODER_HTTP_TOKENS_FILE"),
		HTTPAuth:            env("AUTOCODER_HTTP_AUTH", HTTPAuthToken),
		HTTPAllowedHosts:    os.Getenv("AUTOCODER_HTTP_ALLOWED_HOSTS"),
		RedisTLSCA:          os.Getenv("AUTOCODER_REDIS_TLS_CA"),
		RedisTLSCert:        os.Getenv("AUTOCODER_REDIS_TLS_CERT"),
		RedisTLSKey:         os.Getenv("AUTOCODER_REDIS_TLS_KEY"),
	}
	c.CacheUnsigned = c.envBool("AUTOCODER_CACHE_UNSIGNED")
	c.CacheTTL = c.envDuration("AUTOCODER_CACHE_TTL", DefaultCacheTTL)
	c.readRunCeilings()
	c.readMonitor()
	c.readModelBounds()
	c.NATSAuthConfig = natsAuthFromEnv()
	c.FleetConfig = fleetFromEnv()
	c.JobSettingsConfig = jobSettingsFromEnv()
	c.Concurrency = c.envInt("AUTOCODER_CONCURRENCY")
	c.DockerPoolSize = c.envInt("AUTOCODER_DOCKER_POOL_SIZE")
	c.DockerBuildNetwork = os.Getenv("AUTOCODER_DOCKER_BUILD_NETWORK")
	if c.WorkerName == "" {
		h, _ := os.Hostname()
		c.WorkerName = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	return c
}

// Register adds a flag for every setting to fs, defaulting to c's values.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.OpenAIBaseURL, "openai-base-url", c.OpenAIBaseURL, "model endpoint (OPENAI_BASE_URL)")
	fs.StringVar(&c.Model, "model", c.Model, "default model (AUTOCODER_MODEL)")
	fs.Var(natsURLFlag{&c.NATSURL}, "nats-url", "NATS `URL` to join; empty: embedded server (AUTOCODER_NATS_URL)")
	fs.StringVar(&c.NATSListen, "nats-listen", c.NATSListen, "where an embedded NATS lets other processes in (AUTOCODER_NATS_LISTEN)")
	fs.Var(secretURL{&c.RedisURL}, "redis-url", "Redis cache; empty: embedded cache (AUTOCODER_REDIS_URL)")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "embedded JetStream store and cache (AUTOCODER_STATE_DIR)")
	fs.StringVar(&c.Sandbox, "sandbox", c.Sandbox, "docker|process; empty: docker if an engine answers, else process (AUTOCODER_SANDBOX)")
	fs.StringVar(&c.DockerHost, "docker-host", c.DockerHost, "Docker Engine API, or Podman's compatible service (DOCKER_HOST)")
	fs.StringVar(&c.DockerBaseImage, "docker-base-image", c.DockerBaseImage, "image the docker sandbox builds FROM; empty: python:3.12-slim (AUTOCODER_DOCKER_BASE_IMAGE)")
	fs.StringVar(&c.DockerRuntime, "docker-runtime", c.DockerRuntime, "OCI runtime of sandbox containers, e.g. runsc (AUTOCODER_DOCKER_RUNTIME)")
	fs.IntVar(&c.DockerPoolSize, "docker-pool-size", c.DockerPoolSize, "pre-started sandboxes per hot image; negative: none (AUTOCODER_DOCKER_POOL_SIZE)")
	fs.StringVar(&c.DockerExtraCommands, "docker-extra-commands", c.DockerExtraCommands, "shell commands run as root in every docker sandbox image build, one per line (AUTOCODER_DOCKER_EXTRA_COMMANDS)")
	fs.StringVar(&c.DockerBuildNetwork, "docker-build-network", c.DockerBuildNetwork, "network of pip in docker image builds, for a remote engine; empty: confined to the egress proxy (AUTOCODER_DOCKER_BUILD_NETWORK)")
	fs.StringVar(&c.WarmRunner, "warm-runner", c.WarmRunner, "on|off: run tests and scripts in a child of a warm interpreter per sandbox environment (AUTOCODER_WARM_RUNNER)")
	fs.StringVar(&c.HTTPListen, "http-listen", c.HTTPListen, "coordinator HTTP API, web UI and /metrics (AUTOCODER_HTTP_LISTEN)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "a worker's /metrics (AUTOCODER_METRICS_LISTEN)")
	fs.StringVar(&c.Python, "python", c.Python, "the sandbox's Python interpreter (AUTOCODER_PYTHON)")
	fs.Var(secretURL{&c.PipIndexURL}, "pip-index-url", "package index for sandbox environments (AUTOCODER_PIP_INDEX_URL)")
	fs.StringVar(&c.PipFindLinks, "pip-find-links", c.PipFindLinks, "local wheel folders, comma separated (AUTOCODER_PIP_FIND_LINKS)")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "stages a worker runs at once (AUTOCODER_CONCURRENCY)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug|info|warn|error (AUTOCODER_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text|json: slog's text or JSON lines (AUTOCODER_LOG_FORMAT)")
	fs.StringVar(&c.WorkerName, "worker-name", c.WorkerName, "worker name on results (AUTOCODER_WORKER_NAME)")
	fs.Var(secretFlag{&c.CacheKeys}, "cache-keys", "stage cache HMAC keys, id:base64secret,...; the first signs (AUTOCODER_CACHE_KEYS; prefer --cache-key-file: a flag shows in ps)")
	fs.StringVar(&c.CacheKeyFile, "cache-key-file", c.CacheKeyFile, "file holding the stage cache keys (AUTOCODER_CACHE_KEY_FILE)")
	fs.DurationVar(&c.CacheTTL, "cache-ttl", c.CacheTTL, "how long the stage cache keeps a result; 0: for ever (AUTOCODER_CACHE_TTL)")
	fs.BoolVar(&c.CacheUnsigned, "cache-unsigned", c.CacheUnsigned, "use a Redis cache without a key: anyone who can write to it can forge results (AUTOCODER_CACHE_UNSIGNED)")
	fs.StringVar(&c.StageDeadlines, "stage-deadlines", c.StageDeadlines, "per-stage deadlines, e.g. build=45m,plan=5m (AUTOCODER_STAGE_DEADLINES)")
	c.registerRunCeilings(fs)
	c.registerMonitor(fs)
	c.registerModelBounds(fs)
	c.registerAccess(fs)
	c.NATSAuthConfig.register(fs)
	c.FleetConfig.register(fs)
	c.JobSettingsConfig.register(fs)
}

// registerAccess adds the flags of the HTTP API's and Redis's access settings.
func (c *Config) registerAccess(fs *flag.FlagSet) {
	fs.StringVar(&c.HTTPTokensFile, "http-tokens-file", c.HTTPTokensFile, `HTTP API bearer tokens, lines "scope token" or "name:scope:token" (AUTOCODER_HTTP_TOKENS_FILE)`)
	fs.StringVar(&c.HTTPAuth, "http-auth", c.HTTPAuth, "token|none: none opens the HTTP API to whoever reaches it (AUTOCODER_HTTP_AUTH)")
	fs.StringVar(&c.HTTPAllowedHosts, "http-allowed-hosts", c.HTTPAllowedHosts, "Host names the HTTP API answers besides the listen host and localhost, comma separated (AUTOCODER_HTTP_ALLOWED_HOSTS)")
	fs.StringVar(&c.RedisTLSCA, "redis-tls-ca", c.RedisTLSCA, "PEM CAs of a rediss:// server; empty: system roots (AUTOCODER_REDIS_TLS_CA)")
	fs.StringVar(&c.RedisTLSCert, "redis-tls-cert", c.RedisTLSCert, "client certificate for Redis TLS (AUTOCODER_REDIS_TLS_CERT)")
	fs.StringVar(&c.RedisTLSKey, "redis-tls-key", c.RedisTLSKey, "client key for Redis TLS (AUTOCODER_REDIS_TLS_KEY)")
}

// secretFlag is a string flag whose value is never printed, not even as
// the default in -help.
type secretFlag struct{ p *string }

func (s secretFlag) String() string     { return "" }
func (s secretFlag) Set(v string) error { *s.p = v; return nil }

// envInt reads the whole number in environment variable k; unset is 0,
// anything else that is not a whole number an error Validate reports.
func (c *Config) envInt(k string) int {
	v := strings.TrimSpace(os.Getenv(k))
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not a whole number", k, v))
	}
	return n
}

// DefaultCacheTTL is Config.CacheTTL's default: a month.
const DefaultCacheTTL = 30 * 24 * time.Hour

// envDuration reads the duration in environment variable k (45m, 720h);
// unset is def, a negative or unreadable one an error Validate reports.
func (c *Config) envDuration(k string, def time.Duration) time.Duration {
	v := strings.TrimSpace(os.Getenv(k))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not a duration of zero or more, such as 720h", k, v))
	}
	return d
}

// envBool reads the boolean in environment variable k (strconv.ParseBool:
// true, false, 1, 0, ...); unset is false, anything else an error
// Validate reports.
func (c *Config) envBool(k string) bool {
	v := strings.TrimSpace(os.Getenv(k))
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not true or false", k, v))
	}
	return b
}

// Validate checks the settings that can be checked without I/O.
func (c *Config) Validate() error {
	if len(c.envErrs) > 0 {
		return errors.Join(c.envErrs...)
	}
	for _, check := range []func() error{c.validateBasics, c.validateDeadlines, c.validateDiskQuota, c.validateCeilings, c.validateMonitor,
		c.validateBounds, c.validateCacheKeys, c.validateAccess, c.FleetConfig.validate, c.JobSettingsConfig.validate, c.NATSAuthConfig.validate} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateBasics checks the settings with a few allowed values.
func (c *Config) validateBasics() error {
	switch c.Sandbox {
	case "", "docker", "process":
	default:
		return fmt.Errorf("AUTOCODER_SANDBOX: %q is not docker or process", c.Sandbox)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("AUTOCODER_LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel)
	}
	if err := c.checkLogFormat(); err != nil {
		return err
	}
	if c.StateDir == "" {
		return errors.New("AUTOCODER_STATE_DIR: no state directory (set it, or HOME)")
	}
	if c.Concurrency < 0 {
		return errors.New("AUTOCODER_CONCURRENCY: must not be negative")
	}
	switch c.WarmRunner {
	case "", "on", "off": // "": on
	default:
		return fmt.Errorf("AUTOCODER_WARM_RUNNER: %q is not on or off", c.WarmRunner)
	}
	return nil
}

// WarmRunnerOn says whether the sandbox backends run their warm runner
// (AUTOCODER_WARM_RUNNER).
func (c *Config) WarmRunnerOn() bool { return c.WarmRunner != "off" }

func (c *Config) validateDeadlines() error {
	_, err := c.Deadlines(messages.DefaultStages())
	return err
}

func (c *Config) validateCeilings() error {
	_, err := c.Ceilings()
	return err
}

func (c *Config) validateDiskQuota() error {
	_, err := c.SandboxDiskQuota()
	return err
}

func (c *Config) validateBounds() error {
	_, err := c.Bounds()
	return err
}

// validateCacheKeys checks the cache key settings that need no I/O. Its
// errors name the setting and the bad entry, never a secret.
func (c *Config) validateCacheKeys() error {
	if c.CacheTTL < 0 { // a flag's; the environment's is checked as it is read
		return fmt.Errorf("--cache-ttl %v: must not be negative", c.CacheTTL)
	}
	if c.CacheKeys != "" && c.CacheKeyFile != "" {
		return errors.New("AUTOCODER_CACHE_KEYS and AUTOCODER_CACHE_KEY_FILE are both set: keep one")
	}
	if c.CacheUnsigned && (c.CacheKeys != "" || c.CacheKeyFile != "") {
		return errors.New("AUTOCODER_CACHE_UNSIGNED=true and a cache key are both set: keep one")
	}
	if c.CacheKeys != "" {
		if _, err := cache.ParseKeyring(c.CacheKeys); err != nil {
			return fmt.Errorf("AUTOCODER_CACHE_KEYS: %w", err)
		}
	}
	return nil
}

// validateAccess checks the HTTP API's and Redis's access settings.
func (c *Config) validateAccess() error {
	switch c.HTTPAuth {
	case "", HTTPAuthToken, HTTPAuthNone:
	default:
		return fmt.Errorf("AUTOCODER_HTTP_AUTH: %q is not token or none", c.HTTPAuth)
	}
	// none would serve the API open and drop the tokens without a word:
	// whoever set both meant one of them.
	if c.HTTPAuth == HTTPAuthNone && c.HTTPTokensFile != "" {
		return fmt.Errorf("AUTOCODER_HTTP_AUTH=%s and AUTOCODER_HTTP_TOKENS_FILE contradict each other "+
			"(none would serve the API without its tokens): unset one", HTTPAuthNone)
	}
	if (c.RedisTLSCert == "") != (c.RedisTLSKey == "") {
		return errors.New("AUTOCODER_REDIS_TLS_CERT and AUTOCODER_REDIS_TLS_KEY go together: set both or neither")
	}
	return nil
}

// CacheKeyring returns the configured cache keys (reading
// AUTOCODER_CACHE_KEY_FILE if that is how they are given), or nil when
// none are.
func (c *Config) CacheKeyring() (*cache.Keyring, error) {
	if err := c.validateCacheKeys(); err != nil {
		return nil, err
	}
	switch {
	case c.CacheKeys != "":
		return cache.ParseKeyring(c.CacheKeys)
	case c.CacheKeyFile != "":
		b, err := os.ReadFile(c.CacheKeyFile)
		if err != nil {
			return nil, fmt.Errorf("AUTOCODER_CACHE_KEY_FILE: %w", err)
		}
		k, err := cache.ParseKeyring(string(b))
		if err != nil {
			return nil, fmt.Errorf("AUTOCODER_CACHE_KEY_FILE %s: %w", c.CacheKeyFile, err)
		}
		return k, nil
	}
	return nil, nil
}

// Deadlines parses StageDeadlines: comma-separated stage=duration entries
// (Go durations: 90s, 45m, 1h30m), each naming a stage of stages. The
// error names the bad entry.
func (c *Config) Deadlines(stages messages.StageTable) (map[messages.Stage]time.Duration, error) {
	var out map[messages.Stage]time.Duration
	for _, entry := range strings.Split(c.StageDeadlines, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		bad := func(why string) error {
			return fmt.Errorf("AUTOCODER_STAGE_DEADLINES: %q %s", entry, why)
		}
		name, value, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, bad("is not stage=duration")
		}
		stage := messages.Stage(strings.TrimSpace(name))
		if _, ok := stages.Row(stage); !ok {
			return nil, bad(fmt.Sprintf("names no stage (stages: %s)", stageNames(stages)))
		}
		d, err := time.ParseDuration(strings.TrimSpace(value))
		if err != nil || d <= 0 {
			return nil, bad("needs a positive duration such as 45m")
		}
		if out == nil {
			out = map[messages.Stage]time.Duration{}
		}
		out[stage] = d
	}
	return out, nil
}

func stageNames(stages messages.StageTable) string {
	var names []string
	for _, s := range stages.Stages() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// AllowedHosts splits HTTPAllowedHosts.
func (c *Config) AllowedHosts() []string {
	var out []string
	for _, h := range strings.Split(c.HTTPAllowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// DockerExtra splits DockerExtraCommands into its non-blank lines.
func (c *Config) DockerExtra() []string {
	var out []string
	for _, l := range strings.Split(c.DockerExtraCommands, "\n") {
		// A CRLF file's \r would change the command and the image name.
		if l = strings.TrimSuffix(l, "\r"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// FindLinks splits PipFindLinks.
func (c *Config) FindLinks() []string {
	var out []string
	for _, p := range strings.Split(c.PipFindLinks, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// defaultStateDir is where autocoder keeps its state when
// AUTOCODER_STATE_DIR does not say: $XDG_STATE_HOME/autocoder (an absolute
// XDG_STATE_HOME, as the XDG spec requires), else
// ~/.local/state/autocoder; "" when there is no home either (Validate
// says so).
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "autocoder")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "autocoder")
	}
	return ""
}
