package pyexec_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/codemode"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// processBackend is one bubblewrap backend for the package's tests (on a
// shared state dir, so the base environment is built once), failing the
// test when the host cannot run it (never skipping).
func processBackend(t testing.TB) sandbox.Backend {
	t.Helper()
	procOnce.Do(func() {
		if _, err := exec.LookPath("bwrap"); err != nil {
			procErr = errors.New("bubblewrap is not installed: apt-get install -y bubblewrap")
			return
		}
		dir, err := os.MkdirTemp("", "pyexec-test-")
		if err != nil {
			procErr = err
			return
		}
		procDir = dir
		procBackend, procErr = bwrap.New(bwrap.Config{Python: "/usr/bin/python3", StateDir: dir,
			Logger: slog.New(slog.DiscardHandler)})
	})
	if procErr != nil {
		t.Fatalf("process backend: %v", procErr)
	}
	return keepOpen{procBackend}
}

var (
	procOnce    sync.Once
	procBackend *bwrap.Backend
	procDir     string
	procErr     error
)

// dockerBackend is a Docker (Podman) backend, closed when the test ends;
// it fails without an engine, saying how to get one.
func dockerBackend(t testing.TB) sandbox.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := docker.Ping(ctx, ""); err != nil {
		t.Fatalf("no Docker engine (%v): run scripts/setup-docker.sh and export the DOCKER_HOST it prints", err)
	}
	base := os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE")
	if base == "" {
		base = "autocoder-base:bookworm"
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel2()
	b, err := docker.New(ctx2, docker.Config{BaseImage: base, NoPull: true, Worker: "pyexec-test",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// keepOpen shares a backend: the tests never close it.
type keepOpen struct{ *bwrap.Backend }

func (keepOpen) Close() error { return nil }

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

func cleanupProcState() {
	if procBackend != nil {
		_ = procBackend.Close()
		_ = os.RemoveAll(procDir)
	}
}

var _ = strings.TrimSpace
