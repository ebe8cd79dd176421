package docker_test

import (
	"archive/zip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/pkg/cache"
)

// writeWheel writes a pure-Python wheel of distribution name (a module of
// the same name, dashes as underscores, with VALUE = value) into dir, so
// builds can pip install offline from a wheelhouse.
func writeWheel(t testing.TB, dir, name, value string) {
	t.Helper()
	mod := strings.ReplaceAll(name, "-", "_")
	f, err := os.Create(filepath.Join(dir, mod+"-1.0-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	info := mod + "-1.0.dist-info/"
	files := []struct{ name, content string }{
		{mod + "/__init__.py", fmt.Sprintf("VALUE = %q\n", value)},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: autocoder-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, file := range files {
		w, err := zw.Create(file.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(file.content))
		sum := sha256.Sum256([]byte(file.content))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", file.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(file.content))
	}
	record.WriteString(info + "RECORD,,\n")
	w, err := zw.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// removeImages removes, when the test ends, the images the test built for
// its one-off packages, so repeated runs do not pile them up.
func removeImages(t testing.TB, names ...*string) {
	t.Cleanup(func() {
		cli, err := docker.NewClient("")
		if err != nil {
			return
		}
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range names {
			if *n != "" {
				cli.ImageRemove(ctx, *n, image.RemoveOptions{Force: true, PruneChildren: true})
			}
		}
	})
}

// nonce makes package names unique per test run, so each run really builds.
func nonce(t testing.TB) string {
	b := make([]byte, 5)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// buildCounter counts "image build started" records per image, passing
// every record on to next.
type buildCounter struct {
	next   slog.Handler
	mu     *sync.Mutex
	builds map[string]int
	froms  map[string]string
}

func newBuildCounter(next slog.Handler) *buildCounter {
	return &buildCounter{next: next, mu: &sync.Mutex{}, builds: map[string]int{}, froms: map[string]string{}}
}

func (c *buildCounter) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (c *buildCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "image build started" {
		var image, from string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "image":
				image = a.Value.String()
			case "from":
				from = a.Value.String()
			}
			return true
		})
		c.mu.Lock()
		c.builds[image]++
		c.froms[image] = from
		c.mu.Unlock()
	}
	if c.next.Enabled(ctx, r.Level) {
		return c.next.Handle(ctx, r)
	}
	return nil
}
func (c *buildCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &buildCounter{next: c.next.WithAttrs(as), mu: c.mu, builds: c.builds, froms: c.froms}
}
func (c *buildCounter) WithGroup(g string) slog.Handler {
	return &buildCounter{next: c.next.WithGroup(g), mu: c.mu, builds: c.builds, froms: c.froms}
}
func (c *buildCounter) count(image string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.builds[image]
}
func (c *buildCounter) from(image string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.froms[image]
}

// wheelConfig is a test config whose pip installs only from a local
// wheelhouse (no index: nothing leaves the machine).
func wheelConfig(t testing.TB, wheels string, counter *buildCounter) docker.Config {
	cfg := testConfig(t)
	cfg.PipFindLinks = []string{wheels}
	cfg.PoolSize = -1
	cfg.ReapInterval = -1
	if counter != nil {
		cfg.Logger = slog.New(counter)
	}
	return cfg
}

// TestBuildOnceAcrossWorkers: N concurrent identical Builds, spread over
// two backends (two workers) sharing a cache, make exactly one image build.
func TestBuildOnceAcrossWorkers(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	pkg := "acprobe-" + nonce(t)
	writeWheel(t, wheels, pkg, "one")
	c, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	counter := newBuildCounter(testLogger(t).Handler())
	var backends []*docker.Backend
	for i := range 2 {
		cfg := wheelConfig(t, wheels, counter)
		cfg.Cache = c
		cfg.Worker = fmt.Sprintf("test-build-once-%d", i)
		backends = append(backends, newBackend(t, cfg))
	}

	const n = 8
	ids := make([]string, n)
	removeImages(t, &ids[0])
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			env, err := backends[i%2].Build(t.Context(), sandbox.EnvSpec{Packages: []string{pkg}})
			ids[i], errs[i] = env.ID, err
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Build %d: %v", i, err)
		}
		if ids[i] != ids[0] {
			t.Fatalf("Build %d gave %s, Build 0 gave %s", i, ids[i], ids[0])
		}
	}
	if got := counter.count(ids[0]); got != 1 {
		t.Errorf("%d concurrent Builds on two workers made %d image builds, want 1", n, got)
	}
	res, err := backends[1].Run(t.Context(), sandbox.RunSpec{Env: ids[0],
		Argv: []string{"python", "-c", "import " + strings.ReplaceAll(pkg, "-", "_") + " as m; print(m.VALUE)"}})
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "one" {
		t.Errorf("the package is not importable in its image: %v %s %s", err, res.Stdout, res.Stderr)
	}
}

// lockless is a cache whose locks cannot be taken: Redis away.
type lockless struct{ cache.Cache }

func (lockless) TryLock(context.Context, string, time.Duration) (string, error) {
	return "", errors.New("redis: connection refused")
}

// TestBuildWithoutItsLock: a cache that cannot give the build lock (Redis
// away) does not fail the build: it is built without the lock.
func TestBuildWithoutItsLock(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	pkg := "acprobe-" + nonce(t)
	writeWheel(t, wheels, pkg, "two")
	c, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cfg := wheelConfig(t, wheels, nil)
	cfg.Cache = lockless{c}
	b := newBackend(t, cfg)
	var id string
	removeImages(t, &id)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{Packages: []string{pkg}})
	id = env.ID
	if err != nil || id == "" {
		t.Fatalf("Build with the cache's locks away: %q, %v", id, err)
	}
}

// TestBuildIncrementalAndNames: a superset of a built package set is built
// FROM that image; names are stable whatever the order and spelling of
// the packages; a cache hit makes no build.
func TestBuildIncrementalAndNames(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	n := nonce(t)
	a, bpkg := "acprobe-a-"+n, "acprobe-b-"+n
	writeWheel(t, wheels, a, "a")
	writeWheel(t, wheels, bpkg, "b")
	counter := newBuildCounter(testLogger(t).Handler())
	be := newBackend(t, wheelConfig(t, wheels, counter))
	ctx := t.Context()

	var envA, envAB sandbox.Env
	removeImages(t, &envAB.ID, &envA.ID) // the child first
	envA, err := be.Build(ctx, sandbox.EnvSpec{Packages: []string{a}})
	if err != nil {
		t.Fatal(err)
	}
	envAB, err = be.Build(ctx, sandbox.EnvSpec{Packages: []string{bpkg, strings.ToUpper(a)}})
	if err != nil {
		t.Fatal(err)
	}
	if from := counter.from(envAB.ID); from != envA.ID {
		t.Errorf("the superset was built FROM %q, want the subset's image %q", from, envA.ID)
	}
	again, err := be.Build(ctx, sandbox.EnvSpec{Packages: []string{strings.ReplaceAll(a, "-", "_"), bpkg, bpkg}})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != envAB.ID {
		t.Errorf("equivalent specs got %s and %s", envAB.ID, again.ID)
	}
	if got := counter.count(envAB.ID); got != 1 {
		t.Errorf("image %s built %d times, want 1", envAB.ID, got)
	}
	// Another backend (a restarted worker) finds the image by its name.
	other := newBackend(t, wheelConfig(t, wheels, counter))
	start := time.Now()
	hit, err := other.Build(ctx, sandbox.EnvSpec{Packages: []string{a, bpkg}})
	if err != nil || hit.ID != envAB.ID {
		t.Fatalf("Build on another backend: %v, %s want %s", err, hit.ID, envAB.ID)
	}
	t.Logf("cache hit on a fresh backend: %s", time.Since(start))
	if got := counter.count(envAB.ID); got != 1 {
		t.Errorf("image %s built %d times after a restart, want 1", envAB.ID, got)
	}
	res, err := be.Run(ctx, sandbox.RunSpec{Env: envAB.ID, Argv: []string{"python", "-c",
		fmt.Sprintf("import %s as a, %s as b; print(a.VALUE + b.VALUE)", strings.ReplaceAll(a, "-", "_"), strings.ReplaceAll(bpkg, "-", "_"))}})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "ab" {
		t.Errorf("run in the incremental image: %v %s %s", err, res.Stdout, res.Stderr)
	}
}

// TestBuildExtraCommands: the operator's extra build commands run in the
// image (as root, before the packages) and are part of its name: other
// commands, another image, built FROM the base image rather than FROM an
// image without them.
func TestBuildExtraCommands(t *testing.T) {
	t.Parallel()
	n := nonce(t)
	counter := newBuildCounter(testLogger(t).Handler())
	envs := make([]sandbox.Env, 3)
	removeImages(t, &envs[0].ID, &envs[1].ID, &envs[2].ID)
	extras := [][]string{
		nil,
		{"echo one-" + n + " > /etc/autocoder-extra", "chmod 0644 /etc/autocoder-extra"},
		{"echo two-" + n + " > /etc/autocoder-extra", "chmod 0644 /etc/autocoder-extra"},
	}
	for i, extra := range extras {
		cfg := testConfig(t)
		cfg.PoolSize = -1
		cfg.ExtraCommands = extra
		cfg.Logger = slog.New(counter)
		be := newBackend(t, cfg)
		env, err := be.Build(t.Context(), sandbox.EnvSpec{})
		if err != nil {
			t.Fatalf("build with extra commands %q: %v", extra, err)
		}
		envs[i] = env
		if extra == nil {
			continue
		}
		if from := counter.from(env.ID); from != baseImage() {
			t.Errorf("image with extra commands %q built FROM %q, want the base image %q", extra, from, baseImage())
		}
		res, err := be.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"python", "-c",
			"print(open('/etc/autocoder-extra').read().strip())"}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run: %v %s", err, res.Stderr)
		}
		if got, want := strings.TrimSpace(string(res.Stdout)), strings.Fields(extra[0])[1]; got != want {
			t.Errorf("/etc/autocoder-extra = %q, want %q (the extra command did not run)", got, want)
		}
	}
	if envs[0].ID == envs[1].ID || envs[1].ID == envs[2].ID || envs[0].ID == envs[2].ID {
		t.Errorf("extra commands do not change the image name: %s %s %s", envs[0].ID, envs[1].ID, envs[2].ID)
	}
	envs[0].ID = "" // shared with other tests: keep it
}

// TestBuildInvalidPackages: names pip and apt cannot find become an
// *InvalidPackageError naming them (the loop asks the model for a
// replacement); names that are not package names never reach a Dockerfile.
func TestBuildInvalidPackages(t *testing.T) {
	t.Parallel()
	wheels := t.TempDir()
	writeWheel(t, wheels, "acprobe-real-"+nonce(t), "x")
	be := newBackend(t, wheelConfig(t, wheels, nil))
	ctx := t.Context()
	missing := "acprobe-missing-" + nonce(t)
	aptMissing := "autocoder-no-such-package-" + nonce(t)
	tests := []struct {
		name string
		spec sandbox.EnvSpec
		want []string
	}{
		{"pip not in the index", sandbox.EnvSpec{Packages: []string{missing}}, []string{missing}},
		{"apt not in the archive", sandbox.EnvSpec{SystemPackages: []string{aptMissing}}, []string{aptMissing}},
		{"apt name with shell", sandbox.EnvSpec{SystemPackages: []string{"curl; rm -rf /"}}, []string{"curl; rm -rf /"}},
		{"apt option", sandbox.EnvSpec{SystemPackages: []string{"-oAPT::Get=1"}}, []string{"-oAPT::Get=1"}},
		{"pip url", sandbox.EnvSpec{Packages: []string{"https://evil.example/x.whl"}}, []string{"https://evil.example/x.whl"}},
		{"pip newline", sandbox.EnvSpec{Packages: []string{"pandas\nRUN id"}}, []string{"pandas\nRUN id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := be.Build(ctx, tc.spec)
			var inv *sandbox.InvalidPackageError
			if !errors.As(err, &inv) || !errors.Is(err, sandbox.ErrInvalidPackage) {
				t.Fatalf("Build error = %v, want an *InvalidPackageError", err)
			}
			if diff := cmp.Diff(tc.want, inv.Packages); diff != "" {
				t.Errorf("InvalidPackageError.Packages (-want +got):\n%s\nlog:\n%s", diff, inv.Log)
			}
		})
	}
}

// TestRunUnknownEnv: an image this engine does not have is ErrEnvNotFound.
func TestRunUnknownEnv(t *testing.T) {
	t.Parallel()
	be := newBackend(t, testConfig(t))
	for _, env := range []string{"autocoder-env:0123456789abcdef0123456789abcdef", "python:3.12", "../x"} {
		_, err := be.Run(t.Context(), sandbox.RunSpec{Env: env, Argv: []string{"python", "-c", "pass"}})
		if !errors.Is(err, sandbox.ErrEnvNotFound) {
			t.Errorf("Run(%q) error = %v, want ErrEnvNotFound", env, err)
		}
	}
}

// TestNewErrors: what cannot work fails in New, with the reason.
func TestNewErrors(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	tests := []struct {
		name string
		edit func(*docker.Config)
		want string
	}{
		{"no engine", func(c *docker.Config) { c.Host = "unix:///nonexistent/docker.sock" }, "no engine answers"},
		{"missing base image", func(c *docker.Config) { c.BaseImage = "autocoder-missing:" + nonce(t) }, "base image"},
		{"unknown runtime", func(c *docker.Config) { c.Runtime = "autocoder-no-such-runtime" }, `OCI runtime "autocoder-no-such-runtime"`},
		{"bad pids limit", func(c *docker.Config) { c.PidsLimit = 2 }, "PidsLimit"},
		{"empty extra command", func(c *docker.Config) { c.ExtraCommands = []string{"true", " "} }, "ExtraCommands"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.PoolSize, cfg.ReapInterval = -1, -1
			tc.edit(&cfg)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			b, err := docker.New(ctx, cfg)
			if err == nil {
				b.Close()
			}
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.want)) {
				t.Errorf("New error = %v, want one mentioning %q", err, tc.want)
			}
			if cfg.Runtime != "" {
				// It says what happened, not that python3 may be missing.
				var re *docker.RuntimeError
				if !errors.As(err, &re) || strings.Contains(err.Error(), "python3") ||
					!(strings.Contains(err.Error(), "ignored by the engine") || strings.Contains(err.Error(), "refused by the engine")) {
					t.Errorf("New error = %v, want a RuntimeError saying the engine ignored or refused the runtime", err)
				}
			}
		})
	}
}
