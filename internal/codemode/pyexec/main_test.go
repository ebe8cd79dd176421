package pyexec_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
)

// secretEnv is set in the test process: no program may see it.
const secretEnv = "AUTOCODER_PYEXEC_TEST_SECRET"

func TestMain(m *testing.M) {
	os.Setenv(secretEnv, "hunter2-pyexec")
	code := m.Run()
	for _, s := range []*shared{&proc, &dock} {
		if s.b != nil {
			_ = s.b.Close()
		}
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// shared is one backend for the package's tests, made on first use: the
// base environment is built once, as a worker's is.
type shared struct {
	once sync.Once
	b    sandbox.Backend
	dir  string
	err  error
}

var proc, dock shared

// processBackend is the bubblewrap backend; it fails the test (never
// skips) when the host cannot run it.
func processBackend(t testing.TB) sandbox.Backend {
	t.Helper()
	proc.once.Do(func() {
		if _, err := exec.LookPath("bwrap"); err != nil {
			proc.err = errors.New("bubblewrap is not installed: apt-get install -y bubblewrap")
			return
		}
		if proc.dir, proc.err = os.MkdirTemp("", "pyexec-test-"); proc.err != nil {
			return
		}
		proc.b, proc.err = bwrap.New(bwrap.Config{Python: "/usr/bin/python3", StateDir: proc.dir,
			Logger: slog.New(slog.DiscardHandler)})
	})
	if proc.err != nil {
		t.Fatalf("process backend: %v", proc.err)
	}
	return proc.b
}

// dockerBackend is the Docker (Podman) backend; it fails without an
// engine, saying how to get one.
func dockerBackend(t testing.TB) sandbox.Backend {
	t.Helper()
	dock.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := docker.Ping(ctx, ""); err != nil {
			dock.err = fmt.Errorf("no Docker engine (%w): run scripts/setup-docker.sh and export the DOCKER_HOST it prints", err)
			return
		}
		base := os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE")
		if base == "" {
			base = "autocoder-base:bookworm"
		}
		dock.b, dock.err = docker.New(ctx, docker.Config{BaseImage: base, NoPull: true, Worker: "pyexec-test",
			Logger: slog.New(slog.DiscardHandler)})
	})
	if dock.err != nil {
		t.Fatalf("docker backend: %v", dock.err)
	}
	return dock.b
}

// backends are both sandbox backends, by name.
var backends = []struct {
	name string
	open func(testing.TB) sandbox.Backend
}{{"process", processBackend}, {"docker", dockerBackend}}

// weatherTools are the tools most tests use: a lookup that fails for an
// unknown city, and a paged search.
func weatherTools() *codemode.Registry {
	r := codemode.NewRegistry()
	temps := map[string]int{"Paris": 21, "Oslo": 8, "Cairo": 35, "Lima": 19}
	r.MustRegister(codemode.Tool{
		Name: "get_weather", Doc: "Current weather of a city: {city, temp_c, sky}.",
		Params: []codemode.Param{{Name: "city", Type: codemode.TypeStr, Required: true}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			c := args["city"].(string)
			t, ok := temps[c]
			if !ok {
				return nil, errors.New("unknown city " + c)
			}
			return map[string]any{"city": c, "temp_c": t, "sky": "clear"}, nil
		},
	})
	r.MustRegister(codemode.Tool{
		Name: "search", Doc: "Cities matching a query, a page at a time: {items, next_page} (next_page null at the end).",
		Params: []codemode.Param{{Name: "query", Type: codemode.TypeStr, Required: true}, {Name: "page", Type: codemode.TypeInt}},
		Func: func(_ context.Context, args map[string]any) (any, error) {
			all := []any{"Paris", "Oslo", "Cairo", "Lima"}
			page, _ := args["page"].(int64)
			lo := min(int(page)*2, len(all))
			hi := min(lo+2, len(all))
			var next any
			if hi < len(all) {
				next = page + 1
			}
			return map[string]any{"items": all[lo:hi], "next_page": next}, nil
		},
	})
	return r
}
