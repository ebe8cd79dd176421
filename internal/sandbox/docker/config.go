package docker

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autocoder/autocoder/pkg/cache"
)

// Defaults of Config.
const (
	DefaultBaseImage      = "python:3.12-slim"
	DefaultBuildTimeout   = 15 * time.Minute
	DefaultBuildMemory    = 2 << 30
	DefaultPidsLimit      = 256
	DefaultTmpSize        = 128 << 20
	DefaultShmSize        = 64 << 20
	DefaultMaxFileSize    = 1 << 30
	DefaultDiskQuota      = 256 << 20
	DefaultNoFile         = 4096
	DefaultNProc          = 4096
	DefaultLeaseMargin    = time.Minute
	DefaultReapInterval   = time.Minute
	DefaultPoolSize       = 2
	DefaultPoolImages     = 4
	DefaultPoolLease      = 30 * time.Minute
	DefaultHeartbeatTTL   = 30 * time.Second
	DefaultProbeTimeout   = 60 * time.Second
	defaultPingTimeout    = 5 * time.Second
	sandboxUID            = 10001
	sandboxUser           = "10001:10001"
	maxBuildLog           = 16 << 10
	buildLockPollInterval = time.Second
	// buildLockLease is the image build lock's lease, renewed while the
	// build runs (cache.Renew): a worker that dies mid-build holds up the
	// others for one lease, not for its whole BuildTimeout.
	buildLockLease = 30 * time.Second
)

// Config configures the Docker backend. The zero value of every field means
// its documented default; New validates the result.
type Config struct {
	// Host is the engine's address: unix:///var/run/docker.sock,
	// unix:///run/podman/podman.sock, tcp://host:2376. Empty: DOCKER_HOST
	// (with DOCKER_CERT_PATH and DOCKER_TLS_VERIFY), else the default socket.
	Host string
	// BaseImage is the image every environment is built FROM. It needs
	// python3 (pytest is installed with pip when it lacks it). Default
	// python:3.12-slim. It is pulled when missing unless NoPull is set.
	BaseImage string
	// NoPull never pulls BaseImage: New fails when the engine lacks it. For
	// engines with no registry.
	NoPull bool
	// Runtime is the OCI runtime of every run container, e.g. "runsc"
	// (gVisor). Empty: the engine's default. Builds always use the default.
	Runtime string
	// Worker names this backend in the labels of its containers. Default:
	// host name and pid.
	Worker string
	// Cache holds the cross-worker lock that makes concurrent workers build
	// an image once (cache.Cache.TryLock), and the workers' heartbeats that
	// let a reaper remove a dead worker's containers before their leases
	// end (liveness.go). Nil: builds are deduplicated within this process
	// only, and containers are reaped by their leases only.
	Cache cache.Cache
	// HeartbeatTTL is how long this worker's heartbeat in Cache lasts (it
	// is refreshed three times per TTL): once a worker dies, its containers
	// are reaped within twice HeartbeatTTL plus ReapInterval (a missing
	// heartbeat is trusted once it stays missing for a TTL). Workers that
	// share a Cache should share it. Default 30s;
	// negative: no heartbeat. At least 1s.
	HeartbeatTTL time.Duration

	// PipIndexURL is pip's --index-url inside builds. Empty: pip's default
	// (PyPI), or no index at all when only PipFindLinks is set. Its
	// user:password stays in the worker's egress proxy: builds see the URL
	// without it.
	PipIndexURL string
	// PipFindLinks are wheel locations (pip --find-links). URLs are passed
	// as they are (allowed by the egress proxy, without credentials); local
	// directories are bound read-only into pip's container (copied into the
	// build context with BuildNetwork). Set without PipIndexURL, pip runs
	// with --no-index: offline installs.
	PipFindLinks []string
	// PipExtraArgs are added to every pip install, e.g. "--trusted-host", "pypi.internal".
	PipExtraArgs []string
	// ExtraCommands are shell commands (sh -c) run as root, in order, as
	// RUN steps of every environment image, after the sandbox layout and
	// before the packages: a company CA certificate, a pip.conf, a system
	// library. They are the operator's trusted configuration, never model
	// output, and part of the image name, so changing them makes new images.
	ExtraCommands []string
	// BuildNetwork, when set, is the network mode of image builds, and pip
	// runs in the image build on it, as it did before builds were confined:
	// for a remote engine (the confined pip container needs the worker's
	// egress socket and wheel directories on the engine's machine), with a
	// network the operator confines. It cannot be set with credentials in
	// PipIndexURL (they would be in the image's history). Empty (the
	// default): the trusted steps (layout, ExtraCommands, apt) build with the
	// engine's default network, and pip runs in a container with no network
	// whose only way out is the worker's egress proxy (package egress).
	BuildNetwork string
	// BuildTimeout bounds one image build. Default 15m.
	BuildTimeout time.Duration
	// BuildMemory caps the memory (no swap) of the container pip runs in:
	// pip runs the build code of the packages it installs (setup.py of an
	// sdist), whose names the model chose, and /tmp there is a tmpfs that
	// counts against it. Default 2 GiB; negative: no cap.
	BuildMemory int64

	// PidsLimit caps processes and threads in one sandbox. Default 256.
	PidsLimit int64
	// TmpSize caps the tmpfs at /tmp, in bytes. Default 128 MiB.
	TmpSize int64
	// MaxFileSize is RLIMIT_FSIZE: the largest file a run may write. Default 1 GiB.
	MaxFileSize int64
	// DiskQuota caps what a run may write to /workspace, and separately to
	// /var/outputs, in bytes: each is a tmpfs of that size (like /tmp), so
	// nothing a run writes reaches the engine's disk, and what it writes
	// counts against the container's memory limit too. Default 256 MiB.
	DiskQuota int64
	// NoFile and NProc are the RLIMIT_NOFILE and RLIMIT_NPROC of a run. A
	// runtime refuses to start a container whose limits exceed the engine
	// host's hard limits, so the defaults (4096 each) are lowered to this
	// process's own hard limits. NProc counts every process of the sandbox
	// uid on the host; PidsLimit is the per-sandbox cap.
	NoFile, NProc int64

	// LeaseMargin is added to a run's timeout to make its lease: after
	// that, any worker's reaper removes the container. Default 1m.
	LeaseMargin time.Duration
	// ReapInterval is how often the reaper looks for containers whose lease
	// is over (it also runs once in New). Default 1m; negative: never.
	ReapInterval time.Duration

	// WarmRunner makes every sandbox container's stub import pytest while
	// it waits (in the warm pool, as a rule), and run what it can
	// (sandbox.WarmArgs: pytest, scripts, python -c) in a fork of itself
	// instead of executing a fresh interpreter. Each run still has a
	// fresh container of its own.
	WarmRunner bool
	// PoolSize is the number of started, idle sandboxes kept per hot image
	// (one used by a Build or a Run recently), each used once. A run with
	// the default Memory and CPUs takes one instead of creating a
	// container. Default 2; negative: no pool.
	PoolSize int
	// PoolImages is how many images are kept hot, least recently used
	// dropped first. Default 4.
	PoolImages int
	// PoolLease is the lease of an idle pooled sandbox; it is replaced
	// before the lease is half over. Default 30m.
	PoolLease time.Duration

	// Logger receives build, run and reaper logs. Default: discard.
	Logger *slog.Logger
	// Now is the clock of leases. Default time.Now.
	Now func() time.Time
}

// setDefaults replaces every zero field by its default, then validates.
func (c *Config) setDefaults() error {
	c.BaseImage = cmp.Or(c.BaseImage, DefaultBaseImage)
	if c.Worker == "" {
		h, _ := os.Hostname()
		c.Worker = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	c.BuildTimeout = cmp.Or(c.BuildTimeout, DefaultBuildTimeout)
	c.BuildMemory = cmp.Or(c.BuildMemory, DefaultBuildMemory)
	c.PidsLimit = cmp.Or(c.PidsLimit, DefaultPidsLimit)
	c.TmpSize = cmp.Or(c.TmpSize, DefaultTmpSize)
	c.MaxFileSize = cmp.Or(c.MaxFileSize, DefaultMaxFileSize)
	c.DiskQuota = cmp.Or(c.DiskQuota, DefaultDiskQuota)
	if c.NoFile == 0 {
		c.NoFile = min(DefaultNoFile, hardLimit(unix.RLIMIT_NOFILE))
	}
	if c.NProc == 0 {
		c.NProc = min(DefaultNProc, hardLimit(unix.RLIMIT_NPROC))
	}
	c.LeaseMargin = cmp.Or(c.LeaseMargin, DefaultLeaseMargin)
	c.ReapInterval = cmp.Or(c.ReapInterval, DefaultReapInterval)
	c.PoolSize = cmp.Or(c.PoolSize, DefaultPoolSize)
	c.PoolImages = cmp.Or(c.PoolImages, DefaultPoolImages)
	c.PoolLease = cmp.Or(c.PoolLease, DefaultPoolLease)
	c.HeartbeatTTL = cmp.Or(c.HeartbeatTTL, DefaultHeartbeatTTL)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c.validate()
}

// validate checks a Config with its defaults set.
func (c *Config) validate() error {
	switch {
	case c.BuildTimeout < 0:
		return errors.New("docker: Config.BuildTimeout must not be negative")
	case c.PidsLimit < 8:
		return errors.New("docker: Config.PidsLimit must be at least 8")
	case c.TmpSize < 1<<20:
		return errors.New("docker: Config.TmpSize must be at least 1 MiB")
	case c.MaxFileSize < 1<<20:
		return errors.New("docker: Config.MaxFileSize must be at least 1 MiB")
	case c.DiskQuota < 1<<20:
		return errors.New("docker: Config.DiskQuota must be at least 1 MiB")
	case c.NoFile < 64 || c.NProc < 8:
		return errors.New("docker: Config.NoFile must be at least 64 and Config.NProc at least 8")
	case c.HeartbeatTTL > 0 && c.HeartbeatTTL < time.Second:
		return errors.New("docker: Config.HeartbeatTTL must be at least 1s (or negative: none)")
	case c.LeaseMargin < 0:
		return errors.New("docker: Config.LeaseMargin must not be negative")
	case c.PoolImages < 0 || c.PoolLease < time.Minute:
		return errors.New("docker: Config.PoolImages must not be negative and Config.PoolLease must be at least 1m")
	}
	if u, err := url.Parse(c.PipIndexURL); c.BuildNetwork != "" && err == nil && u.User != nil {
		return errors.New("docker: Config.BuildNetwork cannot be used with credentials in Config.PipIndexURL: " +
			"they would be in the image's history (leave BuildNetwork empty: the egress proxy keeps them)")
	}
	for _, cmd := range c.ExtraCommands {
		if strings.TrimSpace(cmd) == "" || containsNUL(cmd) {
			return errors.New("docker: Config.ExtraCommands has an empty command")
		}
	}
	for _, a := range c.PipExtraArgs {
		if a == "" || containsNUL(a) {
			return errors.New("docker: Config.PipExtraArgs has an empty argument")
		}
	}
	return nil
}

// hardLimit is this process's hard limit of resource r (a stand-in for the
// engine host's when they are the same machine; large when unknown).
func hardLimit(r int) int64 {
	var l unix.Rlimit
	if err := unix.Getrlimit(r, &l); err != nil || l.Max > 1<<40 {
		return 1 << 40
	}
	return int64(l.Max)
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}
