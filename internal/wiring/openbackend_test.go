package wiring_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/wiring"
)

// TestOpenBackendSelection follows Contract 6 (docs/contracts.md): AUTOCODER_SANDBOX picks the
// backend; unset, docker when an engine answers, else process; a clear
// error when the chosen one cannot run.
func TestOpenBackendSelection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	if err := docker.Ping(pctx, ""); err != nil {
		t.Fatalf("%v: run scripts/setup-docker.sh and export the DOCKER_HOST it prints (scripts/test.sh does)", err)
	}
	pcancel()
	base := func() config.Config {
		cfg := config.FromEnv()
		cfg.StateDir = t.TempDir()
		cfg.Python = "/usr/bin/python3"
		if cfg.DockerBaseImage == "" {
			cfg.DockerBaseImage = "autocoder-base:bookworm"
		}
		cfg.DockerPoolSize = -1
		return cfg
	}
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		edit    func(*config.Config)
		want    string // backend name, or "" for an error
		wantErr string
	}{
		{"process", func(c *config.Config) { c.Sandbox = "process" }, "process", ""},
		{"docker", func(c *config.Config) { c.Sandbox = "docker" }, "docker", ""},
		{"unset with an engine", func(c *config.Config) { c.Sandbox = "" }, "docker", ""},
		{"unset without an engine", func(c *config.Config) { c.Sandbox = ""; c.DockerHost = "unix:///nonexistent/docker.sock" }, "process", ""},
		{"docker without an engine", func(c *config.Config) { c.Sandbox = "docker"; c.DockerHost = "unix:///nonexistent/docker.sock" }, "", "no engine answers"},
		{"neither", func(c *config.Config) {
			c.Sandbox = ""
			c.DockerHost = "unix:///nonexistent/docker.sock"
			c.Python = "/nonexistent/python3"
		}, "", "no sandbox backend can run here"},
		{"neither says what to install", func(c *config.Config) {
			c.Sandbox = ""
			c.DockerHost = "unix:///nonexistent/docker.sock"
			c.Python = "/nonexistent/python3"
		}, "", "install bubblewrap, and pytest for /nonexistent/python3: scripts/quickstart.sh does it on Debian"},
		{"neither says what to install", func(c *config.Config) {
			c.Sandbox = ""
			c.DockerHost = "unix:///nonexistent/docker.sock"
			c.Python = "/nonexistent/python3"
		}, "", "install bubblewrap, and pytest for /nonexistent/python3: scripts/quickstart.sh does it on Debian"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.edit(&cfg)
			b, err := wiring.OpenBackend(ctx, cfg, log, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("OpenBackend error = %v, want one mentioning %q", err, tc.wantErr)
				}
				if b != nil {
					b.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenBackend: %v", err)
			}
			defer b.Close()
			if b.Name() != tc.want {
				t.Errorf("backend = %s, want %s", b.Name(), tc.want)
			}
		})
	}
}
