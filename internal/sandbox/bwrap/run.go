package bwrap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// Run runs spec.Argv in a fresh sandbox of the environment spec.Env.
//
// The sandbox sees /usr (and the /bin, /lib links into it), a short list of
// /etc entries, the environment at /opt/venv, /workspace (a fresh copy of
// spec.Files), spec.Inputs read-only under /var/inputs, an empty
// /var/outputs, and size-capped tmpfs mounts at /tmp and /dev/shm. It has
// no network, no capabilities, and no environment but PATH, HOME, LANG,
// thread-count caps and spec.EnvVars. A non-zero exit is a result; an error
// means the sandbox could not run, or ctx ended (the tree is killed first).
func (b *Backend) Run(ctx context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	if b.isClosed() {
		return sandbox.RunResult{}, sandbox.ErrClosed
	}
	if err := spec.Validate(); err != nil {
		return sandbox.RunResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return sandbox.RunResult{}, fmt.Errorf("sandbox: run: %w", err)
	}
	envDir, err := b.envDir(spec.Env)
	if err != nil {
		return sandbox.RunResult{}, err
	}
	if b.warm != nil {
		if args, whyCold := sandbox.WarmArgs(spec); whyCold == "" {
			res, err := b.runWarm(ctx, spec, envDir, args)
			var fb *warmFallback
			if !errors.As(err, &fb) {
				return res, err
			}
			if fb.final {
				b.log.Error("warm runner died during a run that cannot be run again", "env", spec.Env, "reason", fb.reason, "err", fb.err)
			} else {
				b.log.Warn("warm runner unhealthy: running cold", "env", spec.Env, "reason", fb.reason, "err", fb.err)
			}
			if b.cfg.OnWarmFallback != nil {
				b.cfg.OnWarmFallback(fb.reason)
			}
			if fb.final {
				return res, fmt.Errorf("sandbox: %w", fb)
			}
		}
	}
	uid := b.takeUID()
	defer b.releaseUID(uid)
	dir, err := b.newRunDir(spec, uid)
	if err != nil {
		return sandbox.RunResult{}, err
	}
	defer b.removeRunDir(dir)

	res, err := b.exec(ctx, b.runSandbox(spec, envDir, dir, uid))
	out := sandbox.RunResult{
		ExitCode: res.exitCode, TimedOut: res.timedOut, Stdout: res.stdout, Stderr: res.stderr,
		Truncated: res.truncated, Duration: res.duration,
	}
	b.log.Debug("sandbox run", "env", spec.Env, "argv0", spec.Argv[0], "exit_code", out.ExitCode,
		"timed_out", out.TimedOut, "duration", out.Duration, "err", err)
	if err != nil {
		return out, err
	}
	// Nothing of the sandbox runs any more, so what it left cannot change
	// under us; it can still be hostile (symlinks, FIFOs), which collect
	// handles.
	if out.Files, err = collectFiles(dir.workspace, spec.Collect); err != nil {
		return out, err
	}
	if spec.CollectOutputs {
		if out.Outputs, out.OutputDirs, out.OutputsOmitted, err = collectTree(dir.outputs, spec.OutputCaps.WithDefaults()); err != nil {
			return out, err
		}
	}
	return out, nil
}

// runDir is a run's scratch directory under runsDir: the workspace, the
// outputs dir and the synthesized /etc files, and the inputs' mounts.
type runDir struct {
	root, workspace, outputs, etc string
	inputs                        []mount
	quotaMounts                   []string // the tmpfs mounts of mountQuota
}

// mountQuota makes the run's workspace and outputs directories, each a
// tmpfs of Config.DiskQuota when the worker is root (one that is not
// cannot mount, and has no disk quota: see Config.DiskQuota).
func (b *Backend) mountQuota(d *runDir) error {
	for _, dir := range []string{d.workspace, d.outputs} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("sandbox: create run dir: %w", err)
		}
		if !b.root {
			continue
		}
		opts := fmt.Sprintf("size=%d,mode=0755", b.cfg.DiskQuota)
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("sandbox: mount the run's %s (a tmpfs of the disk quota): %w", filepath.Base(dir), err)
		}
		d.quotaMounts = append(d.quotaMounts, dir)
	}
	return nil
}

// newRunDir makes the run dir, owned (in root mode) by the run's uid.
func (b *Backend) newRunDir(spec sandbox.RunSpec, uid uint32) (*runDir, error) {
	root, err := os.MkdirTemp(b.runsDir, "run-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: create run dir: %w", err)
	}
	d := &runDir{root: root, workspace: filepath.Join(root, "workspace"),
		outputs: filepath.Join(root, "outputs"), etc: filepath.Join(root, "etc")}
	if err := b.mountQuota(d); err != nil {
		b.removeRunDir(d)
		return nil, err
	}
	if err := b.populateRunDir(d, spec, uid); err != nil {
		b.removeRunDir(d)
		return nil, err
	}
	return d, nil
}

func (b *Backend) populateRunDir(d *runDir, spec sandbox.RunSpec, uid uint32) error {
	if err := prepareRunDir(d.workspace, spec.Files); err != nil {
		return err
	}
	if err := writeEtc(d.etc, b.sandboxUID(uid)); err != nil {
		return fmt.Errorf("sandbox: write /etc files: %w", err)
	}
	if err := b.chownTree(d.workspace, uid); err != nil {
		return fmt.Errorf("sandbox: chown workspace: %w", err)
	}
	if err := b.chownTree(d.outputs, uid); err != nil {
		return fmt.Errorf("sandbox: chown outputs: %w", err)
	}
	var err error
	d.inputs, err = b.prepareInputs(d.root, spec.Inputs)
	return err
}

func (b *Backend) removeRunDir(d *runDir) {
	for _, m := range d.quotaMounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			b.log.Warn("unmount run dir", "path", m, "err", err)
		}
	}
	if err := os.RemoveAll(d.root); err != nil {
		b.log.Warn("remove run dir", "path", d.root, "err", err)
	}
}

// runSandbox is the sandbox of a run, with the RunSpec defaults applied.
func (b *Backend) runSandbox(spec sandbox.RunSpec, envDir string, d *runDir, uid uint32) *sandboxSpec {
	timeout := cmp.Or(spec.Timeout, sandbox.DefaultRunTimeout)
	memory := cmp.Or(spec.Memory, sandbox.DefaultMemory)
	cpus := cmp.Or(spec.CPUs, sandbox.DefaultCPUs)
	env := sandbox.ThreadEnv(cpus)
	for k, v := range spec.EnvVars {
		env[k] = v
	}
	return &sandboxSpec{
		argv:        spec.Argv,
		env:         env,
		envDir:      envDir,
		workspace:   d.workspace,
		outputs:     d.outputs,
		inputs:      d.inputs,
		etcDir:      d.etc,
		uid:         uid,
		limits:      b.runLimits(memory, timeout, cpus),
		cgroup:      b.runCgroupLimits(memory, cpus),
		timeout:     timeout,
		outputLimit: cmp.Or(spec.OutputLimit, sandbox.DefaultOutputLimit),
		stdio:       spec.Stdio,
	}
}

// prepareRunDir writes the files into the workspace (mountQuota made it
// and the empty outputs dir).
func prepareRunDir(ws string, files map[string][]byte) error {
	for name, data := range files {
		path := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("sandbox: write %s: %w", name, err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("sandbox: write %s: %w", name, err)
		}
	}
	return nil
}

// prepareInputs returns the mounts of the inputs. In root mode an input the
// run's uid could not read (not world-readable) is copied, world-readable,
// into the run dir; everything else is bound in place.
func (b *Backend) prepareInputs(runDir string, inputs map[string]string) ([]mount, error) {
	names := make([]string, 0, len(inputs))
	for name := range inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	var mounts []mount
	for _, name := range names {
		src, err := filepath.Abs(inputs[name])
		if err != nil {
			return nil, fmt.Errorf("sandbox: input %s: %w", name, err)
		}
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("sandbox: input %s: %w", name, err)
		}
		if b.root && !worldReadable(src) {
			dst := filepath.Join(runDir, "inputs", name)
			if err := copyTree(src, dst); err != nil {
				return nil, fmt.Errorf("sandbox: copy input %s: %w", name, err)
			}
			src = dst
		}
		mounts = append(mounts, mount{src: src, dst: sandbox.InputsDir + "/" + name})
	}
	return mounts, nil
}

// worldReadable reports whether everything in the tree at path can be read
// by a uid that owns none of it.
func worldReadable(path string) bool {
	ok := true
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ok = false
			return fs.SkipAll
		}
		fi, err := os.Stat(p) // through symlinks, as the sandbox will read
		if err != nil {
			return nil // a dangling link: nothing to read either way
		}
		need := fs.FileMode(0o004)
		if fi.IsDir() {
			need = 0o005
		}
		if fi.Mode().Perm()&need != need {
			ok = false
			return fs.SkipAll
		}
		return nil
	})
	return ok
}

// copyTree copies regular files and directories (following symlinks at
// the top only), world-readable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		fi, err := os.Stat(path)
		if err != nil {
			return nil
		}
		switch {
		case fi.IsDir():
			return os.MkdirAll(target, 0o755)
		case fi.Mode().IsRegular():
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return copyFile(path, target)
		}
		return nil
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// collectFiles reads the named workspace files. It never follows a symlink
// out of the workspace (the sandbox may have planted one pointing at a host
// secret), never blocks on a FIFO, and leaves out what is missing or not a
// regular file.
func collectFiles(ws string, names []string) (map[string][]byte, error) {
	if len(names) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open workspace: %w", err)
	}
	defer root.Close()
	out := map[string][]byte{}
	budget := int64(sandbox.MaxCollected)
	for _, name := range names {
		data, ok := readRegular(root, name, budget)
		if !ok {
			continue
		}
		budget -= int64(len(data))
		out[name] = data
	}
	return out, nil
}

// readRegular reads name under root if it is a regular file of at most
// limit bytes.
func readRegular(root *os.Root, name string, limit int64) ([]byte, bool) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || int64(len(data)) > limit {
		return nil, false
	}
	return data, true
}

// collectTree reads the regular files under dir that caps select (the
// declared outputs), up to caps.MaxBytes in all and caps.MaxFiles entries,
// and lists its directories. Undeclared entries are skipped unread;
// symlinks and special files are omitted, as are entries past the caps.
func collectTree(dir string, caps sandbox.OutputCaps) (files map[string][]byte, dirs, omitted []string, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sandbox: open outputs: %w", err)
	}
	defer root.Close()
	files = map[string][]byte{}
	budget := caps.MaxBytes
	n := 0
	err = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			omitted = append(omitted, path)
			return nil
		}
		if path == "." {
			return nil
		}
		if !caps.Declared(path) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if n++; n > caps.MaxFiles {
			omitted = append(omitted, path)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, path)
		case d.Type().IsRegular():
			data, ok := readRegular(root, path, budget)
			if !ok {
				omitted = append(omitted, path)
				return nil
			}
			budget -= int64(len(data))
			files[path] = data
		default:
			omitted = append(omitted, path)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sandbox: collect outputs: %w", err)
	}
	return files, dirs, omitted, nil
}
