package bwrap_test

import (
	"archive/zip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
)

func TestNewErrors(t *testing.T) {
	requireHost(t)
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := runCmd(testPython, "-m", "venv", "--without-pip", venv); err != nil {
		t.Fatalf("make a venv: %v: %s", err, out)
	}
	tests := []struct {
		name string
		cfg  bwrap.Config
		want string
	}{
		{"no bwrap", bwrap.Config{Bwrap: "/nonexistent/bwrap"}, "bubblewrap"},
		{"no python", bwrap.Config{Python: "/nonexistent/python3"}, "bwrap.Config.Python"},
		{"venv python", bwrap.Config{Python: filepath.Join(venv, "bin", "python")}, "virtual environment"},
		{"tiny tmp", bwrap.Config{TmpSize: 10}, "TmpSize"},
		{"pip disabled and configured", bwrap.Config{PipDisabled: true, PipIndexURL: "http://x"}, "PipDisabled"},
		{"relative extra path", bwrap.Config{ExtraReadOnly: []string{"etc/x"}}, "not absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.StateDir = t.TempDir()
			if tc.cfg.Python == "" {
				tc.cfg.Python = testPython
			}
			_, err := bwrap.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestEnvIDs(t *testing.T) {
	p := newBackend(t, bwrap.Config{})
	ctx := t.Context()
	id := func(pkgs ...string) string {
		t.Helper()
		env, err := p.Build(ctx, sandbox.EnvSpec{Packages: pkgs})
		if err != nil {
			t.Fatalf("Build(%q): %v", pkgs, err)
		}
		return env.ID
	}
	a := id("pytest", "Pandas")
	if b := id("pandas", "pytest", "pytest"); b != a {
		t.Errorf("equivalent specs got different ids %s and %s", a, b)
	}
	if c := id("pandas>=1", "pytest"); c == a {
		t.Error("a version specifier did not change the id")
	}
	if base := id(); base == a {
		t.Error("the base environment has the id of a package set")
	}
}

func TestBuildReusesBasePackages(t *testing.T) {
	p := newBackend(t, bwrap.Config{PipDisabled: true})
	// Debian's python3-pandas: no pip, no index, and still importable, with
	// the default 512 MiB limit (thread caps keep OpenBLAS within it).
	env, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{"pandas", "numpy>=1.0"}})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if !strings.Contains(env.Log, "already installed") {
		t.Errorf("build log does not say the packages came with the base interpreter:\n%s", env.Log)
	}
	res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c",
		"import pandas, sys; print(pandas.DataFrame({'a': [1, 2]}).a.sum(), sys.prefix)"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "3 /opt/venv" {
		t.Errorf("pandas in the sandbox: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}

	_, err = p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{"numpy>=999"}})
	var inv *sandbox.InvalidPackageError
	if !errors.As(err, &inv) || len(inv.Packages) != 1 || inv.Packages[0] != "numpy>=999" {
		t.Errorf("Build(numpy>=999) with pip disabled: err = %v, want an InvalidPackageError naming it", err)
	}
}

// writeWheel writes a pure-Python wheel of demo-pkg with a console script
// into dir: a wheelhouse for offline installs.
func writeWheel(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "demo_pkg-0.1-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	z := zip.NewWriter(f)
	files := []struct{ name, body string }{
		{"demo_pkg/__init__.py", "VALUE = 42\n\ndef main():\n    print('demo', VALUE)\n"},
		{"demo_pkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 0.1\n"},
		{"demo_pkg-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: sandbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"demo_pkg-0.1.dist-info/entry_points.txt", "[console_scripts]\ndemo = demo_pkg:main\n"},
		{"demo_pkg-0.1.dist-info/RECORD", "demo_pkg/__init__.py,,\ndemo_pkg-0.1.dist-info/METADATA,,\n" +
			"demo_pkg-0.1.dist-info/WHEEL,,\ndemo_pkg-0.1.dist-info/entry_points.txt,,\ndemo_pkg-0.1.dist-info/RECORD,,\n"},
	}
	for _, file := range files {
		w, err := z.Create(file.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(file.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// buildLog is the log an InvalidPackageError carries.
func buildLog(err error) string {
	var inv *sandbox.InvalidPackageError
	if errors.As(err, &inv) {
		return inv.Log
	}
	return ""
}

func wheelhouse(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeWheel(t, dir)
	if err := os.Chmod(dir, 0o755); err != nil { // builds run as other uids
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "demo_pkg-0.1-py3-none-any.whl"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBuildFromWheelhouse(t *testing.T) {
	p := newBackend(t, bwrap.Config{PipFindLinks: []string{wheelhouse(t)}, PipIsolated: true})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{"demo-pkg", "pytest"}})
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, buildLog(err))
	}
	if !strings.Contains(env.Log, "pip install demo-pkg") || strings.Contains(env.Log, "pip install demo-pkg pytest") {
		t.Errorf("build log: want only demo-pkg installed by pip:\n%s", env.Log)
	}
	// The package imports, and pip's console script (its shebang names
	// /opt/venv, where the sandbox sees the environment) runs.
	res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c",
		"import demo_pkg, subprocess; print(demo_pkg.VALUE, flush=True); subprocess.run(['demo'], check=True)"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "42\ndemo 42\n" {
		t.Errorf("exit %d\nstdout: %q\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The base environment does not see it.
	base, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	res, err = p.Run(t.Context(), sandbox.RunSpec{Env: base.ID, Argv: []string{"python", "-c", "import demo_pkg"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 {
		t.Error("a package of one environment is importable in another")
	}
}

func TestBuildUnknownPackage(t *testing.T) {
	p := newBackend(t, bwrap.Config{PipFindLinks: []string{wheelhouse(t)}, PipIsolated: true})
	_, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{"demo-pkg", "surely-not-a-real-package-4821"}})
	var inv *sandbox.InvalidPackageError
	if !errors.As(err, &inv) {
		t.Fatalf("Build error = %v, want an *InvalidPackageError", err)
	}
	if len(inv.Packages) != 1 || inv.Packages[0] != "surely-not-a-real-package-4821" {
		t.Errorf("InvalidPackageError.Packages = %q", inv.Packages)
	}
	if !strings.Contains(inv.Log, "No matching distribution") {
		t.Errorf("the log does not carry pip's reason:\n%s", inv.Log)
	}
}

func TestBuildIndexUnreachable(t *testing.T) {
	// Port 9 on loopback: nothing listens. pip fails fast with no retries.
	p := newBackend(t, bwrap.Config{PipIndexURL: "http://127.0.0.1:9/simple", PipIsolated: true,
		PipExtraArgs: []string{"--retries", "0", "--timeout", "2"}})
	_, err := p.Build(t.Context(), sandbox.EnvSpec{Packages: []string{"surely-not-a-real-package-4821"}})
	if err == nil {
		t.Fatal("Build succeeded with an unreachable index")
	}
	var inv *sandbox.InvalidPackageError
	if errors.As(err, &inv) || errors.Is(err, sandbox.ErrBuildFailed) {
		t.Errorf("an unreachable index is an infrastructure failure, not a bad package: %v\n%s", err, buildLog(err))
	}
	if !strings.Contains(err.Error(), "could not reach the package index") {
		t.Errorf("error = %v", err)
	}
}

func TestBuildConcurrent(t *testing.T) {
	// Two backends on one state dir (two workers on a machine), each with
	// concurrent callers: all get the same environment.
	dir, wheels := sharedStateDir(t), wheelhouse(t)
	cfg := bwrap.Config{StateDir: dir, PipFindLinks: []string{wheels}, PipIsolated: true}
	backends := []*bwrap.Backend{newBackend(t, cfg), newBackend(t, cfg)}
	var wg sync.WaitGroup
	ids := make([]string, 6)
	errs := make([]error, 6)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := backends[i%2].Build(t.Context(), sandbox.EnvSpec{Packages: []string{"demo-pkg"}})
			ids[i], errs[i] = env.ID, err
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			t.Fatalf("Build %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Errorf("Build %d: id %s, want %s", i, ids[i], ids[0])
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "envs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ids[0] {
			t.Errorf("state dir holds %s besides the environment", e.Name())
		}
	}
}

func TestSystemPackages(t *testing.T) {
	p := newBackend(t, bwrap.Config{})
	if _, err := p.Build(t.Context(), sandbox.EnvSpec{SystemPackages: []string{"coreutils"}}); err != nil {
		t.Errorf("an installed system package: %v", err)
	}
	_, err := p.Build(t.Context(), sandbox.EnvSpec{SystemPackages: []string{"coreutils", "surely-not-installed-pkg"}})
	if !errors.Is(err, sandbox.ErrBuildFailed) || !strings.Contains(err.Error(), "surely-not-installed-pkg") ||
		strings.Contains(err.Error(), "coreutils") {
		t.Errorf("a missing system package: err = %v, want ErrBuildFailed naming only it", err)
	}
	_, err = p.Build(t.Context(), sandbox.EnvSpec{SystemPackages: []string{"libfoo; rm -rf /"}})
	if !errors.Is(err, sandbox.ErrInvalidPackage) {
		t.Errorf("an invalid system package name: err = %v, want ErrInvalidPackage", err)
	}
}

func TestRunErrors(t *testing.T) {
	p := newBackend(t, bwrap.Config{})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "../../etc", strings.Repeat("0", 32), "not-an-id"} {
		if _, err := p.Run(t.Context(), sandbox.RunSpec{Env: id, Argv: []string{"python", "-c", "pass"}}); !errors.Is(err, sandbox.ErrEnvNotFound) {
			t.Errorf("Run(Env: %q): err = %v, want ErrEnvNotFound", id, err)
		}
	}
	bad := []sandbox.RunSpec{
		{Env: env.ID},
		{Env: env.ID, Argv: []string{"python"}, Files: map[string][]byte{"../escape.py": nil}},
		{Env: env.ID, Argv: []string{"python"}, Files: map[string][]byte{"/abs.py": nil}},
		{Env: env.ID, Argv: []string{"python"}, Inputs: map[string]string{"a/b": "/etc/hostname"}},
		{Env: env.ID, Argv: []string{"python"}, Inputs: map[string]string{"x": "/nonexistent/file"}},
		{Env: env.ID, Argv: []string{"python"}, Collect: []string{"../../etc/passwd"}},
		{Env: env.ID, Argv: []string{"python"}, EnvVars: map[string]string{"A=B": "c"}},
		{Env: env.ID, Argv: []string{"python"}, Memory: 1024},
	}
	for i, spec := range bad {
		if _, err := p.Run(t.Context(), spec); err == nil {
			t.Errorf("bad spec %d was accepted: %+v", i, spec)
		}
	}
	// A command that does not exist is the command's failure, not the backend's.
	res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"no-such-command"}})
	if err != nil || res.ExitCode != 127 {
		t.Errorf("missing command: exit %d, err %v; want exit 127 and no error", res.ExitCode, err)
	}
	p.Close()
	if _, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"true"}}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	if _, err := p.Build(t.Context(), sandbox.EnvSpec{}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Build after Close: %v", err)
	}
}

func TestHidesHost(t *testing.T) {
	dir := sharedStateDir(t)
	p := newBackend(t, bwrap.Config{StateDir: dir})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c", `
import os, sys
for path in sys.argv[1:]:
    print(path, "visible" if os.path.exists(path) else "hidden")
print("root-entries", sorted(os.listdir("/")))
print("etc-entries", sorted(os.listdir("/etc")))
`, "/etc/shadow", "/etc/gshadow", "/etc/pip.conf", "/etc/ssh", "/root", home, dir, "/home", "/run", "/sys", "/var/lib", "/work"}})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	if res.ExitCode != 0 || strings.Contains(out, "visible") {
		t.Errorf("host paths are visible in the sandbox (exit %d):\n%s%s", res.ExitCode, out, res.Stderr)
	}
	if !strings.Contains(out, "root-entries ['bin', 'dev', 'etc', 'lib', 'lib64', 'opt', 'proc', 'sbin', 'tmp', 'usr', 'var', 'workspace']") {
		t.Errorf("unexpected root:\n%s", out)
	}
}

func TestPrivateInputsAreReadable(t *testing.T) {
	// An input only its owner (the worker) may read, in a directory nobody
	// else may enter: the sandbox, a different uid, still reads it.
	p := newBackend(t, bwrap.Config{})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "private.csv")
	if err := os.WriteFile(path, []byte("private,data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Inputs: map[string]string{"sales.csv": path},
		Argv: []string{"python", "-c", "print(open('/var/inputs/sales.csv').read(), end='')"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "private,data\n" {
		t.Errorf("exit %d stdout %q stderr %s", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func TestRunCleansUp(t *testing.T) {
	dir := sharedStateDir(t)
	p := newBackend(t, bwrap.Config{StateDir: dir})
	env, err := p.Build(t.Context(), sandbox.EnvSpec{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	for _, argv := range [][]string{{"python", "-c", "open('/workspace/x', 'w').write('x')"}, {"sleep", "60"}} {
		_, _ = p.Run(ctx, sandbox.RunSpec{Env: env.ID, Argv: argv, Files: map[string][]byte{"a.py": []byte("x")},
			CollectOutputs: true, Timeout: time.Minute})
	}
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("run directories left behind: %v", entries)
	}
}

func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// TestReportsLimits checks that the backend says which limits are
// in force: as root on a host with cgroups (CI), a cgroup per run with
// memory, memory+swap, CPU and pids limits besides the rlimits.
func TestReportsLimits(t *testing.T) {
	p := newBackend(t, bwrap.Config{})
	l := p.Limits()
	t.Logf("limits in force: %+v", l)
	if diff := cmp.Diff([]string{"as", "nproc", "fsize", "nofile", "cpu"}, l.Rlimits); diff != "" {
		t.Errorf("Rlimits (-want +got):\n%s", diff)
	}
	if l.Cgroup == "" {
		if os.Geteuid() == 0 {
			t.Fatalf("no cgroup in force as root: %s", l.CgroupUnavailable)
		}
		if l.CgroupUnavailable == "" {
			t.Error("no cgroup in force, and no reason given")
		}
		return
	}
	if diff := cmp.Diff([]string{"memory", "memory+swap", "cpu", "pids"}, l.CgroupLimits); diff != "" {
		t.Errorf("CgroupLimits (-want +got):\n%s", diff)
	}
}
