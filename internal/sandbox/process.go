package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/protocol"
	"golang.org/x/sys/unix"
)

var _ Backend = (*Process)(nil)

// Defaults of ProcessConfig and RunSpec.
const (
	DefaultPython       = "/usr/bin/python3"
	DefaultBuildTimeout = 15 * time.Minute
	DefaultMaxProcs     = 256
	DefaultBuildMemory  = 2 << 30
	DefaultTmpSize      = 128 << 20
	DefaultMaxFileSize  = 1 << 30
	DefaultUIDBase      = 1_600_000_000
	DefaultUIDCount     = 1_000_000

	DefaultRunTimeout  = 60 * time.Second
	DefaultMemory      = 512 << 20
	DefaultCPUs        = 1.0
	DefaultOutputLimit = 1 << 20

	// MaxCollected caps what a run returns from /var/outputs and from
	// RunSpec.Collect, each.
	MaxCollected = 64 << 20
)

// Paths inside every sandbox (Contract 2 (docs/contracts.md)).
const (
	envMount       = "/opt/venv"
	workspaceMount = "/workspace"
	inputsMount    = protocol.InputsDir
	outputsMount   = protocol.OutputsDir
	sandboxPython  = envMount + "/bin/python"
	sandboxPATH    = envMount + "/bin:/usr/local/bin:/usr/bin:/bin"
)

// ProcessConfig configures the process backend. The zero value of every
// field means its documented default; NewProcess validates the result.
type ProcessConfig struct {
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
	// AUTOCODER_STATE_DIR), not its envs subdirectory. Default:
	// $XDG_STATE_HOME/autocoder, else ~/.local/state/autocoder.
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
	// ExtraReadOnly are more host paths bound read-only at the same place in
	// every sandbox (e.g. /etc/ImageMagick-6 or a model directory).
	ExtraReadOnly []string
	// UIDBase and UIDCount are the host uids sandboxes run as when the worker
	// is root: each concurrent run or build takes a free one at random.
	// Pick a range no real user has. Defaults 1600000000 and 1000000.
	UIDBase, UIDCount uint32

	// Logger receives build and run logs. Default: discard.
	Logger *slog.Logger
}

// Process is the bubblewrap backend: each run is a fresh sandbox with no
// network, a read-only view of only the system directories Python needs, a
// size-capped /tmp, rlimits, and a wall-clock kill of its whole process tree.
// Environments are virtual environments under StateDir/envs.
type Process struct {
	cfg    ProcessConfig
	log    *slog.Logger
	bwrap  string
	tools  tools
	py     pythonInfo
	root   bool // the worker is root: sandboxes run as uids from uids
	uids   *uidPool
	cg     *cgroups // nil: no usable cgroup, rlimits only
	limits Limits
	flight BuildGroup

	envsDir, runsDir string

	mu     sync.Mutex
	closed bool
}

// tools are the util-linux helpers that run inside the sandbox, so they
// must live under /usr.
type tools struct {
	prlimit, setpriv string
}

// pythonInfo describes the base interpreter.
type pythonInfo struct {
	Executable string   `json:"executable"` // sys.executable
	Version    string   `json:"version"`    // sys.version
	Prefixes   []string `json:"prefixes"`   // real base prefixes, bound read-only when not under /usr
	InVenv     bool     `json:"in_venv"`
	Pip        bool     `json:"pip"`
	Pytest     bool     `json:"pytest"`
}

const pythonProbe = `
import importlib.util, json, os, sys
print(json.dumps({
    "executable": sys.executable,
    "version": sys.version,
    "prefixes": sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}),
    "in_venv": sys.prefix != sys.base_prefix,
    "pip": importlib.util.find_spec("pip") is not None,
    "pytest": importlib.util.find_spec("pytest") is not None,
}))
`

// NewProcess checks the host (bubblewrap can create a sandbox, the
// interpreter runs, the util-linux helpers exist), creates the state
// directories and returns the backend.
func NewProcess(cfg ProcessConfig) (*Process, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	p := &Process{
		cfg:     cfg,
		log:     cfg.Logger,
		root:    os.Geteuid() == 0,
		uids:    &uidPool{base: cfg.UIDBase, count: cfg.UIDCount},
		envsDir: filepath.Join(cfg.StateDir, "envs"),
		runsDir: filepath.Join(cfg.StateDir, "runs"),
	}
	markInheritedCloseOnExec()
	var err error
	if p.bwrap, err = exec.LookPath(cfg.Bwrap); err != nil {
		return nil, fmt.Errorf("sandbox: bubblewrap %q not found (install it, e.g. apt-get install bubblewrap): %w", cfg.Bwrap, err)
	}
	if p.tools, err = findTools(); err != nil {
		return nil, err
	}
	if p.py, err = probePython(cfg.Python); err != nil {
		return nil, err
	}
	for _, d := range []string{p.envsDir, p.runsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: create state dir: %w", err)
		}
	}
	if p.root {
		// Builds run as unprivileged uids, which must read the wheelhouse.
		for _, fl := range append(absPaths(cfg.PipIndexURL), cfg.PipFindLinks...) {
			if filepath.IsAbs(fl) && !worldReadable(fl) {
				return nil, fmt.Errorf("sandbox: pip find-links/index path %s must be readable by all users "+
					"(chmod -R o+rX): builds run as unprivileged uids", fl)
			}
		}
	}
	p.removeStale()
	p.setupCgroups()
	if err := p.probeSandbox(); err != nil {
		return nil, err
	}
	if !p.py.Pytest {
		p.log.Warn("base interpreter has no pytest: RunTests will report an import error", "python", p.py.Executable)
	}
	p.log.Info("process sandbox ready", "python", p.py.Executable, "python_version", firstLine(p.py.Version),
		"bwrap", p.bwrap, "state_dir", cfg.StateDir, "per_run_uid", p.root,
		"cgroup", p.limits.Cgroup, "cgroup_limits", p.limits.CgroupLimits, "rlimits", p.limits.Rlimits)
	return p, nil
}

// Limits says which limits the process backend enforces on every run.
type Limits struct {
	// Cgroup is "v2" or "v1" when each run has a cgroup of its own, ""
	// when none is usable (e.g. an unprivileged worker without a
	// delegated cgroup) and only rlimits apply.
	Cgroup string
	// CgroupLimits are what the run's cgroup caps for the sandbox as a
	// whole: some of memory, memory+swap, cpu (a CFS quota of
	// RunSpec.CPUs) and pids.
	CgroupLimits []string
	// CgroupUnavailable says why no cgroup is used, when Cgroup is "".
	CgroupUnavailable string
	// Rlimits are the per-process limits every sandboxed process has,
	// cgroup or not: as (address space, RunSpec.Memory), nproc (MaxProcs
	// per run uid), fsize, nofile and cpu (CPU seconds: timeout x CPUs).
	Rlimits []string
}

// Limits reports the limits in force, as found at start-up.
func (p *Process) Limits() Limits {
	l := p.limits
	l.CgroupLimits = append([]string(nil), l.CgroupLimits...)
	l.Rlimits = append([]string(nil), l.Rlimits...)
	return l
}

// setupCgroups finds a usable cgroup hierarchy for per-run cgroups and
// says once, at start-up, which limits are in force.
func (p *Process) setupCgroups() {
	p.limits.Rlimits = []string{"as", "nproc", "fsize", "nofile", "cpu"}
	cg, err := detectCgroups()
	if err != nil {
		p.limits.CgroupUnavailable = err.Error()
		p.log.Warn("no usable cgroup: sandbox memory, CPU and process limits are per-process rlimits only",
			"reason", err.Error())
		return
	}
	cg.removeStale()
	p.cg = cg
	p.limits.Cgroup = cg.version()
	p.limits.CgroupLimits = cg.enforced()
}

func (c *ProcessConfig) setDefaults() error {
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.Bwrap == "" {
		c.Bwrap = "bwrap"
	}
	if c.StateDir == "" {
		dir, err := defaultStateDir()
		if err != nil {
			return err
		}
		c.StateDir = dir
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return fmt.Errorf("sandbox: state dir %q: %w", c.StateDir, err)
	}
	c.StateDir = abs
	if c.BuildTimeout == 0 {
		c.BuildTimeout = DefaultBuildTimeout
	}
	if c.BuildMemory == 0 {
		c.BuildMemory = DefaultBuildMemory
	}
	if c.MaxProcs == 0 {
		c.MaxProcs = DefaultMaxProcs
	}
	if c.TmpSize == 0 {
		c.TmpSize = DefaultTmpSize
	}
	if c.MaxFileSize == 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.UIDBase == 0 {
		c.UIDBase = DefaultUIDBase
	}
	if c.UIDCount == 0 {
		c.UIDCount = DefaultUIDCount
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.BuildTimeout < 0:
		return errors.New("sandbox: ProcessConfig.BuildTimeout must not be negative")
	case c.MaxProcs < 8:
		return errors.New("sandbox: ProcessConfig.MaxProcs must be at least 8")
	case c.TmpSize < 1<<20:
		return errors.New("sandbox: ProcessConfig.TmpSize must be at least 1 MiB")
	case c.MaxFileSize < 1<<20:
		return errors.New("sandbox: ProcessConfig.MaxFileSize must be at least 1 MiB")
	case c.UIDCount < 64 || uint64(c.UIDBase)+uint64(c.UIDCount) >= 1<<32-1:
		return errors.New("sandbox: ProcessConfig.UIDBase/UIDCount must give at least 64 uids below 4294967295")
	case c.UIDBase < 1000:
		return errors.New("sandbox: ProcessConfig.UIDBase must not overlap system uids (< 1000)")
	case c.PipDisabled && (c.PipIndexURL != "" || len(c.PipFindLinks) > 0):
		return errors.New("sandbox: ProcessConfig.PipDisabled conflicts with PipIndexURL/PipFindLinks")
	}
	for _, p := range c.ExtraReadOnly {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("sandbox: ProcessConfig.ExtraReadOnly path %q is not absolute", p)
		}
	}
	return nil
}

// markInheritedCloseOnExec sets close-on-exec on every descriptor above
// stderr. Go opens all of its own that way, but descriptors the worker
// inherited (from a supervisor, a shell, socket activation) are not, and
// os/exec would pass them on into every sandbox. This changes process-wide
// state once, as runc's CloseExecFrom does; the worker keeps using them.
func markInheritedCloseOnExec() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd") // kernels before 5.11
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

func defaultStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "autocoder"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("sandbox: no ProcessConfig.StateDir and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "autocoder"), nil
}

// findTools finds prlimit and setpriv. They are exec'd inside the sandbox,
// where only /usr (and the /bin, /lib links into it) is visible.
func findTools() (tools, error) {
	find := func(name string) (string, error) {
		for _, dir := range []string{"/usr/bin", "/usr/sbin", "/bin", "/sbin"} {
			path := filepath.Join(dir, name)
			if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return path, nil
			}
		}
		return "", fmt.Errorf("sandbox: %s not found in /usr/bin or /bin (it is part of util-linux)", name)
	}
	var t tools
	var err error
	if t.prlimit, err = find("prlimit"); err != nil {
		return t, err
	}
	if os.Geteuid() == 0 {
		t.setpriv, err = find("setpriv")
	}
	return t, err
}

func probePython(python string) (pythonInfo, error) {
	var info pythonInfo
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// -I: ignore PYTHON* variables and the user site, as the sandbox will.
	cmd := exec.CommandContext(ctx, python, "-I", "-c", pythonProbe)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return info, fmt.Errorf("sandbox: python interpreter %q does not run (set ProcessConfig.Python): %w: %s",
			python, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return info, fmt.Errorf("sandbox: python interpreter %q: unexpected probe output %q: %w", python, out, err)
	}
	if info.InVenv {
		return info, fmt.Errorf("sandbox: python interpreter %q is inside a virtual environment; "+
			"ProcessConfig.Python must be a base interpreter", python)
	}
	if !filepath.IsAbs(info.Executable) {
		return info, fmt.Errorf("sandbox: python interpreter %q reports no executable path", python)
	}
	return info, nil
}

// probeSandbox runs the interpreter once in a sandbox, so that a host where
// bubblewrap cannot work fails at startup with the reason.
func (p *Process) probeSandbox() error {
	dir, err := os.MkdirTemp(p.runsDir, "probe-")
	if err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	defer os.RemoveAll(dir)
	uid := p.takeUID()
	defer p.releaseUID(uid)
	etc := filepath.Join(dir, "etc")
	if err := writeEtc(etc, p.sandboxUID(uid)); err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	res, err := p.exec(context.Background(), &sandboxSpec{
		argv:        []string{p.py.Executable, "-I", "-c", "print('sandbox-ok')"},
		etcDir:      etc,
		uid:         uid,
		timeout:     30 * time.Second,
		outputLimit: 64 << 10,
		limits:      p.runLimits(DefaultMemory, 30*time.Second, 1),
		cgroup:      p.runCgroupLimits(DefaultMemory, 1),
	})
	if err == nil && (res.exitCode != 0 || !bytes.Contains(res.stdout, []byte("sandbox-ok"))) {
		err = fmt.Errorf("exit code %d: %s", res.exitCode, strings.TrimSpace(string(res.stderr)))
	}
	if err != nil {
		hint := "are unprivileged user namespaces enabled (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces)?"
		if p.root {
			hint = "does this container allow mount namespaces (CAP_SYS_ADMIN, no seccomp/AppArmor block on mount)?"
		}
		return fmt.Errorf("sandbox: bubblewrap %s cannot run a sandbox here; %s: %w", p.bwrap, hint, err)
	}
	return nil
}

// removeStale deletes scratch directories that crashed workers left behind.
// A day is far longer than any run or build, so live ones are never hit.
func (p *Process) removeStale() {
	cutoff := time.Now().Add(-24 * time.Hour)
	for _, dir := range []string{p.runsDir, p.envsDir} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if dir == p.envsDir && !strings.HasPrefix(e.Name(), ".tmp-") {
				continue
			}
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
				path := filepath.Join(dir, e.Name())
				if err := os.RemoveAll(path); err != nil {
					p.log.Warn("remove stale sandbox dir", "path", path, "err", err)
				}
			}
		}
	}
}

// Name is "process".
func (p *Process) Name() string { return "process" }

// Close makes later Build and Run calls fail with ErrClosed. Runs in
// progress finish (their contexts bound them); environments stay on disk.
func (p *Process) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return nil
}

func (p *Process) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Process) takeUID() uint32 {
	if !p.root {
		return 0
	}
	return p.uids.get()
}

func (p *Process) releaseUID(uid uint32) {
	if p.root {
		p.uids.put(uid)
	}
}

// sandboxUID is the uid processes see inside the sandbox: the host uid in
// root mode (no user namespace), else the mapped uid.
func (p *Process) sandboxUID(hostUID uint32) uint32 {
	if p.root {
		return hostUID
	}
	return innerUID
}

// chownTree gives a tree to the sandbox uid (root mode only: otherwise the
// worker's own files are already the sandbox's).
func (p *Process) chownTree(root string, uid uint32) error {
	if !p.root {
		return nil
	}
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(uid), int(uid))
	})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
