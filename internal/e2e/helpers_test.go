package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

const python = "/usr/bin/python3"

// requireSandboxTools fails (never skips) when the machine lacks what the
// end-to-end tests need: scripts/setup.sh installs it.
func requireSandboxTools(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Fatal("bwrap not found: run scripts/setup.sh")
	}
	if out, err := exec.Command(python, "-c", "import pytest").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import pytest (%v: %s): run scripts/setup.sh", python, err, out)
	}
}

func testConfig(t testing.TB, fake *fakellm.Server) config.Config {
	cfg := config.FromEnv()
	cfg.StateDir = t.TempDir()
	cfg.NATSURL = ""
	cfg.RedisURL = ""
	cfg.Sandbox = "process"
	cfg.Python = python
	cfg.LogLevel = "warn"
	cfg.Concurrency = 2
	if fake != nil {
		cfg.OpenAIBaseURL = fake.URL()
		cfg.OpenAIAPIKey = "test-key"
	}
	return cfg
}

// startLocal runs the whole system in-process on embedded defaults, talking
// to the fake model over real HTTP.
func startLocal(t testing.TB, cfg config.Config) *wiring.Stack {
	t.Helper()
	requireSandboxTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func runJob(t testing.TB, st *wiring.Stack, spec messages.JobSpec) *messages.Result {
	t.Helper()
	if err := spec.Validate(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id := client.NewJobID()
	if err := st.Client.Submit(ctx, id, spec); err != nil {
		t.Fatalf("submit: %v", err)
	}
	res, err := st.Client.Watch(ctx, id, nil)
	if err != nil {
		t.Fatalf("watch %s: %v", id, err)
	}
	return res
}

func stageNames(r *messages.Result) []string {
	var out []string
	for _, s := range r.Stages {
		out = append(out, string(s.Name))
	}
	return out
}

func countStage(r *messages.Result, stage messages.Stage) int {
	n := 0
	for _, s := range r.Stages {
		if s.Name == stage {
			n++
		}
	}
	return n
}

// buildWheel writes a minimal pure-Python wheel to dir, so pip can install
// it offline with --no-index --find-links.
func buildWheel(t testing.TB, dir, dist, module, source string) {
	t.Helper()
	norm := dist // already a valid wheel name component in the tests
	files := map[string]string{
		module + "/__init__.py":          source,
		norm + "-1.0.dist-info/METADATA": fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n", dist),
		norm + "-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: autocoder-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	record := ""
	for name, body := range files {
		sum := sha256.Sum256([]byte(body))
		record += fmt.Sprintf("%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	recordName := norm + "-1.0.dist-info/RECORD"
	record += recordName + ",,\n"
	files[recordName] = record
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, norm+"-1.0-py3-none-any.whl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildCommands builds the repository's packages pkgs (./cmd/...) into a
// directory of the test's and returns it.
func buildCommands(t testing.TB, pkgs ...string) string {
	t.Helper()
	bin := t.TempDir()
	build := exec.Command("go", append([]string{"build", "-o", bin}, pkgs...)...)
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", pkgs, err, out)
	}
	return bin
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test")
		}
		dir = parent
	}
}
