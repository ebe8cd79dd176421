package bwrap

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
)

// Defaults of Config.
const (
	DefaultPython       = "/usr/bin/python3"
	DefaultBuildTimeout = 15 * time.Minute
	DefaultMaxProcs     = 256
	DefaultBuildMemory  = 2 << 30
	DefaultBuildDisk    = 10 << 30
	DefaultTmpSize      = 128 << 20
	DefaultMaxFileSize  = 1 << 30
	DefaultDiskQuota    = 256 << 20
	DefaultUIDBase      = 1_600_000_000
	DefaultUIDCount     = 1_000_000
)

// Config configures the bubblewrap backend. The zero value of every
// field means its documented default; New validates the result.
type Config struct {
	// Python is the base interpreter. Environments are virtual environments
	// made from it with --system-site-packages, so what its distribution
	// already installed (e.g. Debian's python3-pandas) is reused, not
	// downloaded. It must be a base interpreter, not a venv. Default
	// /usr/bin/python3.
	Python string
	// Bwrap is the bubblewrap executable. Default: "bwrap" from PATH.
	Bwrap string
	// StateDir holds environments (StateDir/envs/<id>) and per-run scratch
	// directories (StateDir/runs). Pass the state dir itself (e.g.
	// AUTOCODER_STATE_DIR, whose default internal/config chooses), not its
	// envs subdirectory. Required.
	StateDir string

	// PipIndexURL is pip's --index-url. Empty: pip's own configuration
	// (pip.conf, PIP_INDEX_URL; PyPI by default), or no index at all when
	// only PipFindLinks is set.
	PipIndexURL string
	// PipFindLinks are wheel directories or URLs (pip --find-links). Set
	// without PipIndexURL, pip runs with --no-index: offline installs from a
	// wheelhouse.
	PipFindLinks []string
	// PipExtraArgs are added to every pip install, e.g. "--only-binary=:all:"
	// or "--retries", "1".
	PipExtraArgs []string
	// PipIsolated makes pip ignore pip.conf files and PIP_* environment
	// variables, so that only the fields above configure it.
	PipIsolated bool
	// PipDisabled never runs pip: a package the base interpreter lacks is
	// reported as an *InvalidPackageError. For hosts with no index at all.
	PipDisabled bool
	// BuildTimeout bounds one environment build. Default 15m.
	BuildTimeout time.Duration
	// BuildMemory caps the memory (no swap) of an environment build's
	// cgroup, where cgroups are usable: pip runs the build code of the
	// packages it installs (setup.py of an sdist), whose names the model
	// chose. Default 2 GiB; negative: no cap.
	BuildMemory int64
	// BuildDisk caps what an environment build writes to the worker's disk
	// (the venv and the build's /tmp, together): build code whose package
	// the model named could otherwise fill the disk every run needs. It is
	// also each file's size limit (RLIMIT_FSIZE). Default 10 GiB; negative:
	// no cap.
	BuildDisk int64

	// MaxProcs is RLIMIT_NPROC for a sandbox: processes and threads. When
	// the worker runs as root, each run has its own host uid and the limit
	// is per run; otherwise the kernel counts every process of the worker's
	// user and the limit is raised by what that user runs already. Default 256.
	MaxProcs int
	// TmpSize caps the tmpfs at /tmp (and the one at /dev/shm), in bytes.
	// Default 128 MiB.
	TmpSize int64
	// MaxFileSize is RLIMIT_FSIZE: the largest file a run may write, in
	// bytes. Default 1 GiB.
	MaxFileSize int64
	// DiskQuota caps what a run may write to /workspace, and separately to
	// /var/outputs, in bytes: when the worker runs as root each is a tmpfs
	// of that size, mounted on the run's directory (what the run writes
	// there counts against its memory cgroup too). A worker that is not
	// root cannot mount one: it has no disk quota, only MaxFileSize per
	// file, and New logs so. Default 256 MiB.
	DiskQuota int64
	// ExtraReadOnly are more host paths bound read-only at the same place in
	// every sandbox (e.g. /etc/ImageMagick-6 or a model directory).
	ExtraReadOnly []string
	// UIDBase and UIDCount are the host uids sandboxes run as when the worker
	// is root: each concurrent run or build takes a free one at random.
	// Pick a range no real user has. Defaults 1600000000 and 1000000.
	UIDBase, UIDCount uint32

	// WarmRunner runs what it can (sandbox.WarmArgs: pytest, scripts,
	// python -c) in a child of a per-environment zygote that has imported
	// pytest once, isolated as a cold run is (warm.go, docs/sandbox.md).
	// It needs a root worker and a usable cgroup; without them New logs
	// why and every run is cold.
	WarmRunner bool
	// OnWarmFallback, if set, is called with the reason (WarmFallback*)
	// each time a warm run falls back to a cold one (a metric).
	OnWarmFallback func(reason string)

	// Logger receives build and run logs. Default: discard.
	Logger *slog.Logger
}

// setDefaults replaces every zero field by its default, then validates.
func (c *Config) setDefaults() error {
	if err := c.setStateDir(); err != nil {
		return err
	}
	c.Python = cmp.Or(c.Python, DefaultPython)
	c.Bwrap = cmp.Or(c.Bwrap, "bwrap")
	c.BuildTimeout = cmp.Or(c.BuildTimeout, DefaultBuildTimeout)
	c.BuildMemory = cmp.Or(c.BuildMemory, DefaultBuildMemory)
	c.BuildDisk = cmp.Or(c.BuildDisk, DefaultBuildDisk)
	c.MaxProcs = cmp.Or(c.MaxProcs, DefaultMaxProcs)
	c.TmpSize = cmp.Or(c.TmpSize, DefaultTmpSize)
	c.MaxFileSize = cmp.Or(c.MaxFileSize, DefaultMaxFileSize)
	c.DiskQuota = cmp.Or(c.DiskQuota, DefaultDiskQuota)
	c.UIDBase = cmp.Or(c.UIDBase, DefaultUIDBase)
	c.UIDCount = cmp.Or(c.UIDCount, DefaultUIDCount)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c.validate()
}

// setStateDir makes StateDir absolute.
func (c *Config) setStateDir() error {
	if c.StateDir == "" {
		return errors.New("sandbox: bwrap.Config.StateDir is required (the process's state dir, AUTOCODER_STATE_DIR)")
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return fmt.Errorf("sandbox: state dir %q: %w", c.StateDir, err)
	}
	c.StateDir = abs
	return nil
}

// validate checks a Config with its defaults set.
func (c *Config) validate() error {
	switch {
	case c.BuildTimeout < 0:
		return errors.New("sandbox: bwrap.Config.BuildTimeout must not be negative")
	case c.MaxProcs < 8:
		return errors.New("sandbox: bwrap.Config.MaxProcs must be at least 8")
	case c.TmpSize < 1<<20:
		return errors.New("sandbox: bwrap.Config.TmpSize must be at least 1 MiB")
	case c.MaxFileSize < 1<<20:
		return errors.New("sandbox: bwrap.Config.MaxFileSize must be at least 1 MiB")
	case c.DiskQuota < 1<<20:
		return errors.New("sandbox: bwrap.Config.DiskQuota must be at least 1 MiB")
	case c.UIDCount < 64 || uint64(c.UIDBase)+uint64(c.UIDCount) >= 1<<32-1:
		return errors.New("sandbox: bwrap.Config.UIDBase/UIDCount must give at least 64 uids below 4294967295")
	case c.UIDBase < 1000:
		return errors.New("sandbox: bwrap.Config.UIDBase must not overlap system uids (< 1000)")
	case c.PipDisabled && (c.PipIndexURL != "" || len(c.PipFindLinks) > 0):
		return errors.New("sandbox: bwrap.Config.PipDisabled conflicts with PipIndexURL/PipFindLinks")
	}
	for _, p := range c.ExtraReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("sandbox: bwrap.Config.ExtraReadOnly path %q is not absolute", p)
		}
	}
	return nil
}
