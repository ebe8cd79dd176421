package bwrap

import (
	"bytes"
	"context"
	"encoding/json"
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

	"golang.org/x/sys/unix"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/egress"
)

var _ sandbox.Backend = (*Backend)(nil)

// Paths of the environment inside every sandbox; the others are
// sandbox.WorkspaceDir, InputsDir and OutputsDir (Contract 2 (docs/contracts.md)).
const (
	envMount      = "/opt/venv"
	sandboxPython = envMount + "/bin/python"
	sandboxPATH   = envMount + "/bin:/usr/local/bin:/usr/bin:/bin"
)

// Backend is the bubblewrap backend: each run is a fresh sandbox with no
// network, a read-only view of only the system directories Python needs, a
// size-capped /tmp, rlimits, and a wall-clock kill of its whole process tree.
// Environments are virtual environments under StateDir/envs.
type Backend struct {
	cfg    Config
	log    *slog.Logger
	bwrap  string
	tools  tools
	py     pythonInfo
	root   bool // the worker is root: sandboxes run as uids from uids
	uids   *uidPool
	cg     *cgroups // nil: no usable cgroup, rlimits only
	limits Limits
	flight sandbox.BuildGroup
	egress *egress.Proxy // the only way out of a build
	warm   *warmPool     // nil: no warm runner (Config.WarmRunner, warmAvailable)
	// seccomp is the compiled filter every sandbox loads (seccomp.go).
	seccomp []byte

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

// New checks the host (bubblewrap can create a sandbox, the
// interpreter runs, the util-linux helpers exist), creates the state
// directories and returns the backend.
func New(cfg Config) (*Backend, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	b := &Backend{
		cfg:     cfg,
		log:     cfg.Logger,
		root:    os.Geteuid() == 0,
		uids:    &uidPool{base: cfg.UIDBase, count: cfg.UIDCount},
		envsDir: filepath.Join(cfg.StateDir, "envs"),
		runsDir: filepath.Join(cfg.StateDir, "runs"),
	}
	markInheritedCloseOnExec()
	var err error
	if b.bwrap, err = exec.LookPath(cfg.Bwrap); err != nil {
		return nil, fmt.Errorf("sandbox: bubblewrap %q not found (install it, e.g. apt-get install bubblewrap): %w", cfg.Bwrap, err)
	}
	if b.tools, err = findTools(); err != nil {
		return nil, err
	}
	if b.seccomp, err = hostSeccompFilter(); err != nil {
		return nil, err
	}
	if !b.root {
		b.log.Warn("sandbox runs have no disk quota: only a root worker can mount their size-capped tmpfs; each file is still capped",
			"max_file_size", cfg.MaxFileSize)
	}
	if b.py, err = probePython(cfg.Python); err != nil {
		return nil, err
	}
	for _, d := range []string{b.envsDir, b.runsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: create state dir: %w", err)
		}
	}
	if b.root {
		// Builds run as unprivileged uids, which must read the wheelhouse.
		for _, fl := range append(absPaths(cfg.PipIndexURL), cfg.PipFindLinks...) {
			if filepath.IsAbs(fl) && !worldReadable(fl) {
				return nil, fmt.Errorf("sandbox: pip find-links/index path %s must be readable by all users "+
					"(chmod -R o+rX): builds run as unprivileged uids", fl)
			}
		}
	}
	if b.egress, err = egress.New(egress.Config{Sources: pipSources(cfg), Logger: cfg.Logger}); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	b.removeStale()
	b.setupCgroups()
	if err := b.probeSandbox(); err != nil {
		return nil, err
	}
	if why := b.warmAvailable(); why == "" {
		b.warm = &warmPool{zygotes: map[string]*zygoteSlot{}}
	} else if b.cfg.WarmRunner {
		b.log.Warn("no warm runner: every run starts a fresh interpreter", "reason", why)
	}
	if !b.py.Pytest {
		b.log.Warn("base interpreter has no pytest: RunTests will report an import error", "python", b.py.Executable)
	}
	b.log.Info("process sandbox ready", "python", b.py.Executable, "python_version", firstLine(b.py.Version),
		"bwrap", b.bwrap, "state_dir", cfg.StateDir, "per_run_uid", b.root,
		"cgroup", b.limits.Cgroup, "cgroup_limits", b.limits.CgroupLimits, "rlimits", b.limits.Rlimits,
		"warm_runner", b.warm != nil)
	return b, nil
}

// Limits says which limits the backend enforces on every run.
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
func (b *Backend) Limits() Limits {
	l := b.limits
	l.CgroupLimits = append([]string(nil), l.CgroupLimits...)
	l.Rlimits = append([]string(nil), l.Rlimits...)
	return l
}

// setupCgroups finds a usable cgroup hierarchy for per-run cgroups and
// says once, at start-up, which limits are in force.
func (b *Backend) setupCgroups() {
	b.limits.Rlimits = []string{"as", "nproc", "fsize", "nofile", "cpu"}
	cg, err := detectCgroups()
	if err != nil {
		b.limits.CgroupUnavailable = err.Error()
		b.log.Warn("no usable cgroup: sandbox memory, CPU and process limits are per-process rlimits only",
			"reason", err.Error())
		return
	}
	cg.removeStale()
	b.cg = cg
	b.limits.Cgroup = cg.version()
	b.limits.CgroupLimits = cg.enforced()
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
		return info, fmt.Errorf("sandbox: python interpreter %q does not run (set bwrap.Config.Python): %w: %s",
			python, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return info, fmt.Errorf("sandbox: python interpreter %q: unexpected probe output %q: %w", python, out, err)
	}
	if info.InVenv {
		return info, fmt.Errorf("sandbox: python interpreter %q is inside a virtual environment; "+
			"bwrap.Config.Python must be a base interpreter", python)
	}
	if !filepath.IsAbs(info.Executable) {
		return info, fmt.Errorf("sandbox: python interpreter %q reports no executable path", python)
	}
	return info, nil
}

// probeSandbox runs the interpreter once in a sandbox, so that a host where
// bubblewrap cannot work fails at startup with the reason.
func (b *Backend) probeSandbox() error {
	dir, err := os.MkdirTemp(b.runsDir, "probe-")
	if err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	defer os.RemoveAll(dir)
	uid := b.takeUID()
	defer b.releaseUID(uid)
	etc := filepath.Join(dir, "etc")
	if err := writeEtc(etc, b.sandboxUID(uid)); err != nil {
		return fmt.Errorf("sandbox: probe: %w", err)
	}
	res, err := b.exec(context.Background(), &sandboxSpec{
		argv:        []string{b.py.Executable, "-I", "-c", "print('sandbox-ok')"},
		etcDir:      etc,
		uid:         uid,
		timeout:     30 * time.Second,
		outputLimit: 64 << 10,
		limits:      b.runLimits(sandbox.DefaultMemory, 30*time.Second, 1),
		cgroup:      b.runCgroupLimits(sandbox.DefaultMemory, 1),
	})
	if err == nil && (res.exitCode != 0 || !bytes.Contains(res.stdout, []byte("sandbox-ok"))) {
		err = fmt.Errorf("exit code %d: %s", res.exitCode, strings.TrimSpace(string(res.stderr)))
	}
	if err != nil {
		hint := "are unprivileged user namespaces enabled (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces)?"
		if b.root {
			hint = "does this container allow mount namespaces (CAP_SYS_ADMIN, no seccomp/AppArmor block on mount)?"
		}
		return fmt.Errorf("sandbox: bubblewrap %s cannot run a sandbox here; %s: %w", b.bwrap, hint, err)
	}
	return nil
}

// removeStale deletes scratch directories that crashed workers left behind.
// A day is far longer than any run or build, so live ones are never hit.
func (b *Backend) removeStale() {
	cutoff := time.Now().Add(-24 * time.Hour)
	for _, dir := range []string{b.runsDir, b.envsDir} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if dir == b.envsDir && !strings.HasPrefix(e.Name(), ".tmp-") {
				continue
			}
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
				path := filepath.Join(dir, e.Name())
				if dir == b.runsDir && b.root { // a crashed run's quota tmpfs mounts (mountQuota)
					for _, sub := range []string{"workspace", "outputs"} {
						_ = unix.Unmount(filepath.Join(path, sub), unix.MNT_DETACH) // EINVAL: not a mount
					}
				}
				if err := os.RemoveAll(path); err != nil {
					b.log.Warn("remove stale sandbox dir", "path", path, "err", err)
				}
			}
		}
	}
}

// Name is "process".
func (b *Backend) Name() string { return "process" }

// Close makes later Build and Run calls fail with ErrClosed and stops the
// warm runners. Runs in progress finish (their contexts bound them; a warm
// one outlives its zygote); environments stay on disk.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	if b.warm != nil {
		b.closeWarm()
	}
	return nil
}

func (b *Backend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (b *Backend) takeUID() uint32 {
	if !b.root {
		return 0
	}
	return b.uids.get()
}

func (b *Backend) releaseUID(uid uint32) {
	if b.root {
		b.uids.put(uid)
	}
}

// sandboxUID is the uid processes see inside the sandbox: the host uid in
// root mode (no user namespace), else the mapped uid.
func (b *Backend) sandboxUID(hostUID uint32) uint32 {
	if b.root {
		return hostUID
	}
	return innerUID
}

// chownTree gives a tree to the sandbox uid (root mode only: otherwise the
// worker's own files are already the sandbox's).
func (b *Backend) chownTree(root string, uid uint32) error {
	if !b.root {
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

// PythonVersion is the interpreter's major and minor version, "3.11".
func (b *Backend) PythonVersion() string { return sandbox.MajorMinor(b.py.Version) }

// Identity implements sandbox.Identified: the interpreter's sys.version.
func (b *Backend) Identity() string { return "python " + firstLine(b.py.Version) }

var _ sandbox.PythonVersioned = (*Backend)(nil)
