package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	HTTPListen          string // AUTOCODER_HTTP_LISTEN; default 127.0.0.1:8080
	MetricsListen       string // AUTOCODER_METRICS_LISTEN; default 127.0.0.1:0
	Python              string // AUTOCODER_PYTHON: the sandbox's interpreter; default /usr/bin/python3
	PipIndexURL         string // AUTOCODER_PIP_INDEX_URL: package index for sandbox environments
	PipFindLinks        string // AUTOCODER_PIP_FIND_LINKS: local wheel folders, comma separated
	Concurrency         int    // AUTOCODER_CONCURRENCY: stages a worker runs at once; default 4 (llm) / 2 (sandbox)
	LogLevel            string // AUTOCODER_LOG_LEVEL: debug|info|warn|error; default info
	WorkerName          string // AUTOCODER_WORKER_NAME; default host name and pid

	NATSAuthConfig // NATS credentials, TLS and the embedded server's users (natsauth.go)
}

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
		HTTPListen:          env("AUTOCODER_HTTP_LISTEN", "127.0.0.1:8080"),
		MetricsListen:       env("AUTOCODER_METRICS_LISTEN", "127.0.0.1:0"),
		Python:              env("AUTOCODER_PYTHON", "/usr/bin/python3"),
		PipIndexURL:         os.Getenv("AUTOCODER_PIP_INDEX_URL"),
		PipFindLinks:        os.Getenv("AUTOCODER_PIP_FIND_LINKS"),
		LogLevel:            env("AUTOCODER_LOG_LEVEL", "info"),
		WorkerName:          os.Getenv("AUTOCODER_WORKER_NAME"),
	}
	c.NATSAuthConfig = natsAuthFromEnv()
	fmt.Sscan(os.Getenv("AUTOCODER_CONCURRENCY"), &c.Concurrency)
	fmt.Sscan(os.Getenv("AUTOCODER_DOCKER_POOL_SIZE"), &c.DockerPoolSize)
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
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis cache; empty: embedded cache (AUTOCODER_REDIS_URL)")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "embedded JetStream store and cache (AUTOCODER_STATE_DIR)")
	fs.StringVar(&c.Sandbox, "sandbox", c.Sandbox, "docker|process; empty: docker if an engine answers, else process (AUTOCODER_SANDBOX)")
	fs.StringVar(&c.DockerHost, "docker-host", c.DockerHost, "Docker Engine API, or Podman's compatible service (DOCKER_HOST)")
	fs.StringVar(&c.DockerBaseImage, "docker-base-image", c.DockerBaseImage, "image the docker sandbox builds FROM; empty: python:3.12-slim (AUTOCODER_DOCKER_BASE_IMAGE)")
	fs.StringVar(&c.DockerRuntime, "docker-runtime", c.DockerRuntime, "OCI runtime of sandbox containers, e.g. runsc (AUTOCODER_DOCKER_RUNTIME)")
	fs.IntVar(&c.DockerPoolSize, "docker-pool-size", c.DockerPoolSize, "pre-started sandboxes per hot image; negative: none (AUTOCODER_DOCKER_POOL_SIZE)")
	fs.StringVar(&c.DockerExtraCommands, "docker-extra-commands", c.DockerExtraCommands, "shell commands run as root in every docker sandbox image build, one per line (AUTOCODER_DOCKER_EXTRA_COMMANDS)")
	fs.StringVar(&c.HTTPListen, "http-listen", c.HTTPListen, "coordinator HTTP API, web UI and /metrics (AUTOCODER_HTTP_LISTEN)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "a worker's /metrics (AUTOCODER_METRICS_LISTEN)")
	fs.StringVar(&c.Python, "python", c.Python, "the sandbox's Python interpreter (AUTOCODER_PYTHON)")
	fs.StringVar(&c.PipIndexURL, "pip-index-url", c.PipIndexURL, "package index for sandbox environments (AUTOCODER_PIP_INDEX_URL)")
	fs.StringVar(&c.PipFindLinks, "pip-find-links", c.PipFindLinks, "local wheel folders, comma separated (AUTOCODER_PIP_FIND_LINKS)")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "stages a worker runs at once (AUTOCODER_CONCURRENCY)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug|info|warn|error (AUTOCODER_LOG_LEVEL)")
	fs.StringVar(&c.WorkerName, "worker-name", c.WorkerName, "worker name on results (AUTOCODER_WORKER_NAME)")
	c.NATSAuthConfig.register(fs)
}

// Validate checks the settings that can be checked without I/O.
func (c *Config) Validate() error {
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
	if c.StateDir == "" {
		return errors.New("AUTOCODER_STATE_DIR: no state directory (set it, or HOME)")
	}
	if c.Concurrency < 0 {
		return errors.New("AUTOCODER_CONCURRENCY: must not be negative")
	}
	return c.NATSAuthConfig.validate()
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

func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "autocoder")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "autocoder")
	}
	return ""
}
