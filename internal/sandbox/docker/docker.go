package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/egress"
)

var _ sandbox.Backend = (*Backend)(nil)

// Backend runs sandboxes as containers of a Docker Engine (or Podman's
// Docker-compatible service): environments are images built FROM a base
// image, each run a fresh hardened container.
type Backend struct {
	cfg  Config
	log  *slog.Logger
	cli  *client.Client
	base baseInfo
	// domain is the liveness domain this worker heartbeats in ("": no
	// heartbeat); set in New before any container starts.
	domain string
	// instance names this Backend (random) in labels and its heartbeat.
	instance string

	flight sandbox.BuildGroup
	egress *egress.Proxy // the only way out of pip's build containers
	// securityOpts are every container's (seccomp.go).
	securityOpts []string
	// podman: the engine is Podman's compat service, which differs in how
	// it takes a seccomp profile and sees into tmpfs mounts (run.go).
	podman bool
	known  sync.Map // image name -> struct{}: built or seen, so Build needs no API call
	pool   *pool

	// reapMu serialises reaper passes; missingSince (under it) is when a
	// pass first found an instance's heartbeat missing (liveness.go).
	reapMu       sync.Mutex
	missingSince map[string]time.Time

	bg       sync.WaitGroup // reaper, pool filler, container removals
	removing atomic.Int64   // container removals in flight
	stop     chan struct{}
	mu       sync.Mutex
	closed   bool
}

// baseInfo describes the base image.
type baseInfo struct {
	ID     string // image ID (a digest)
	Python string `json:"version"` // sys.version
	Pytest bool   `json:"pytest"`
	Pip    bool   `json:"pip"`
}

// NewClient returns an engine client for host ("" = DOCKER_HOST or the
// default socket) that negotiates the API version with the engine.
func NewClient(host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: client for %q: %w", host, err)
	}
	return cli, nil
}

// Ping reports whether an engine answers at host ("" = DOCKER_HOST or the
// default socket) within ctx.
func Ping(ctx context.Context, host string) error {
	cli, err := NewClient(host)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx); err != nil {
		return fmt.Errorf("docker: no engine answers at %s: %w", cli.DaemonHost(), err)
	}
	return nil
}

// New connects to the engine, makes sure the base image is there (pulling
// it unless Config.NoPull), runs it once with the hardened settings so that
// an engine that cannot run sandboxes fails here with the reason, starts
// the worker heartbeat (with a Cache), removes containers whose lease is
// over or whose worker is gone, and starts the reaper and the warm pool.
func New(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	cli, err := NewClient(cfg.Host)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, log: cfg.Logger, cli: cli, stop: make(chan struct{}), instance: newNonce(), missingSince: map[string]time.Time{}}
	if b.egress, err = egress.New(egress.Config{Sources: pipSources(cfg), Logger: cfg.Logger}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker: %w", err)
	}
	if err := b.init(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	b.pool = newPool(b)
	b.startLiveness(ctx)
	b.reap(ctx)
	if cfg.ReapInterval > 0 {
		b.bg.Add(1)
		go b.reapLoop()
	}
	if cfg.PoolSize > 0 {
		b.bg.Add(1)
		go b.pool.run()
	}
	b.log.Info("docker sandbox ready", "host", cli.DaemonHost(), "api_version", cli.ClientVersion(),
		"base_image", cfg.BaseImage, "base_id", shortID(b.base.ID), "python", firstLine(b.base.Python),
		"runtime", cfg.Runtime, "worker", cfg.Worker)
	return b, nil
}

func (b *Backend) init(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, defaultPingTimeout)
	_, err := b.cli.Ping(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("docker: no engine answers at %s (start Docker, or podman system service, and set DOCKER_HOST): %w",
			b.cli.DaemonHost(), err)
	}
	b.cli.NegotiateAPIVersion(ctx)
	inspect, err := b.cli.ImageInspect(ctx, b.cfg.BaseImage)
	if cerrdefs.IsNotFound(err) && !b.cfg.NoPull {
		if err := b.pull(ctx, b.cfg.BaseImage); err != nil {
			return err
		}
		inspect, err = b.cli.ImageInspect(ctx, b.cfg.BaseImage)
	}
	if err != nil {
		return fmt.Errorf("docker: base image %s: %w", b.cfg.BaseImage, err)
	}
	b.base.ID = inspect.ID
	if b.cfg.BuildNetwork == "" && !engineIsLocal(b.cli.DaemonHost()) {
		return fmt.Errorf("docker: the engine at %s is not on this machine, and pip builds bind the worker's egress "+
			"proxy socket into their container: run the engine here, or set Config.BuildNetwork "+
			"(AUTOCODER_DOCKER_BUILD_NETWORK) to build on a network of the engine's (then only as confined as it)", b.cli.DaemonHost())
	}
	if b.podman, err = b.enginePodman(ctx); err != nil {
		return err
	}
	if b.securityOpts, err = b.securityOptions(); err != nil { // seccomp.go; before the first container
		return err
	}
	return b.probe(ctx)
}

func (b *Backend) pull(ctx context.Context, ref string) error {
	b.log.Info("pulling base image", "image", ref)
	rc, err := b.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("docker: pull base image %s: %w", ref, err)
	}
	defer rc.Close()
	msg, err := readJSONStream(rc, io.Discard)
	if err == nil && msg != "" {
		err = errors.New(msg)
	}
	if err != nil {
		return fmt.Errorf("docker: pull base image %s: %w", ref, err)
	}
	return nil
}

const probeScript = `
import importlib.util, json, sys
print(json.dumps({"version": sys.version,
    "pytest": importlib.util.find_spec("pytest") is not None,
    "pip": importlib.util.find_spec("pip") is not None}))
`

// probe runs the base image's python3 in a hardened container.
func (b *Backend) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	res, err := b.runCommand(ctx, b.cfg.BaseImage, []string{"python3", "-I", "-c", probeScript})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit code %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if err == nil {
		err = json.Unmarshal(bytes.TrimSpace(res.Stdout), &b.base)
	}
	if re := (*RuntimeError)(nil); errors.As(err, &re) {
		return re
	}
	if err != nil {
		return fmt.Errorf("docker: cannot run python3 from %s in a sandbox container on %s "+
			"(does the image have python3? do Config.NoFile/NProc exceed the engine host's hard limits?): %w",
			b.cfg.BaseImage, b.cli.DaemonHost(), err)
	}
	if !b.base.Pip && !b.base.Pytest {
		b.log.Warn("base image has neither pytest nor pip: RunTests will report an import error", "image", b.cfg.BaseImage)
	}
	return nil
}

// Name is "docker".
func (b *Backend) Name() string { return "docker" }

// Close stops the reaper and the pool, removes the pooled containers and
// waits for removals in flight. Runs in progress finish (their contexts
// bound them); images stay.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.stop)
	b.mu.Unlock()
	b.bg.Wait()
	b.pool.drain()
	b.bg.Wait()
	return b.cli.Close()
}

func (b *Backend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// goBackground runs fn in a goroutine that Close waits for, unless the
// backend is closed (then fn runs now).
func (b *Backend) goBackground(fn func()) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		fn()
		return
	}
	b.bg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.bg.Done()
		fn()
	}()
}

// readJSONStream reads the JSON message stream of a build or pull, writing
// the "stream" text to log, and returns the error message it ends with.
func readJSONStream(r io.Reader, log io.Writer) (string, error) {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return "", nil
			}
			return "", err
		}
		io.WriteString(log, m.Stream)
		if m.Error != "" || m.ErrorDetail.Message != "" {
			msg := m.ErrorDetail.Message
			if msg == "" {
				msg = m.Error
			}
			// Drain the rest so the connection can be reused.
			_, _ = io.Copy(io.Discard, r)
			return msg, nil
		}
	}
}

// engineIsLocal tells whether an engine address is on this machine: a
// Unix socket, or TCP on a loopback address.
func engineIsLocal(host string) bool {
	u, err := url.Parse(host)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "unix", "npipe":
		return true
	case "tcp", "http", "https":
		if u.Hostname() == "localhost" {
			return true
		}
		ip := net.ParseIP(u.Hostname())
		return ip != nil && ip.IsLoopback()
	}
	return false
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// remaining is the time left before ctx's deadline, at most limit.
func remaining(ctx context.Context, limit time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(min(time.Until(dl), limit), time.Second)
	}
	return limit
}

// PythonVersion is the base image's Python, major and minor: "3.11".
func (b *Backend) PythonVersion() string { return sandbox.MajorMinor(b.base.Python) }

// Identity implements sandbox.Identified: the base image's ID and its
// python3's sys.version.
func (b *Backend) Identity() string {
	return "image " + b.base.ID + " python " + firstLine(b.base.Python)
}

var _ sandbox.PythonVersioned = (*Backend)(nil)
