package wiring_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/wiring"
)

// TestStartFailsCleanly starts a stack whose infrastructure is broken in
// each way a user can break it. Start must return an error that says what
// is wrong — promptly, without a panic, and with whatever it had opened
// closed again — so the binaries can exit 3 with one line.
func TestStartFailsCleanly(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	// Nothing listens here: a port taken and released at once.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	tests := []struct {
		name    string
		edit    func(t *testing.T, o *wiring.Options)
		wantErr string
	}{
		{"the store directory is a file", func(t *testing.T, o *wiring.Options) {
			if err := os.WriteFile(filepath.Join(o.Config.StateDir, "jetstream"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			o.Roles = []wiring.Role{wiring.RoleCoordinator}
		}, "jetstream"},
		{"the listen port is taken", func(t *testing.T, o *wiring.Options) {
			o.EmbeddedListen = busy.Addr().String()
			o.Config.NATSAuth = config.NATSAuthNone // this case is about the port
			o.Roles = []wiring.Role{wiring.RoleCoordinator}
		}, "address already in use"},
		{"the listener has no users", func(t *testing.T, o *wiring.Options) {
			o.EmbeddedListen = "127.0.0.1:0"
			o.Roles = []wiring.Role{wiring.RoleCoordinator}
		}, "AUTOCODER_NATS_AUTH=none"},
		{"the users file is missing", func(t *testing.T, o *wiring.Options) {
			o.EmbeddedListen = "127.0.0.1:0"
			o.Config.NATSUsersFile = "/nonexistent/users.yaml"
			o.Roles = []wiring.Role{wiring.RoleCoordinator}
		}, "/nonexistent/users.yaml"},
		{"a worker's NATS credentials are incomplete", func(t *testing.T, o *wiring.Options) {
			o.Config.NATSURL = "nats://" + deadAddr
			o.Config.NATSUser = "llm"
			o.Roles = []wiring.Role{wiring.RoleLLMWorker}
		}, "password"},
		{"redis does not answer", func(t *testing.T, o *wiring.Options) {
			o.Config.RedisURL = "redis://" + deadAddr + "/0"
			o.Roles = []wiring.Role{wiring.RoleLLMWorker}
		}, deadAddr},
		{"the sandbox interpreter is missing", func(t *testing.T, o *wiring.Options) {
			o.Config.Sandbox = "process"
			o.Config.Python = "/nonexistent/python3"
			o.Roles = []wiring.Role{wiring.RoleSandboxWorker}
		}, "/nonexistent/python3"},
		{"docker is asked for and no engine answers", func(t *testing.T, o *wiring.Options) {
			o.Config.Sandbox = "docker"
			o.Config.DockerHost = "unix:///nonexistent/docker.sock"
			o.Roles = []wiring.Role{wiring.RoleSandboxWorker}
		}, "no engine answers"},
		{"remote NATS does not answer", func(t *testing.T, o *wiring.Options) {
			o.Config.NATSURL = "nats://" + deadAddr
			o.ConnectTimeout = time.Second
		}, deadAddr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.FromEnv()
			cfg.StateDir = t.TempDir()
			cfg.NATSURL, cfg.RedisURL = "", ""
			o := wiring.Options{Config: cfg, Logger: slog.New(slog.DiscardHandler)}
			tc.edit(t, &o)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			st, err := wiring.Start(ctx, o)
			if err == nil {
				st.Close()
				t.Fatal("Start succeeded; want an error")
			}
			if st != nil {
				t.Errorf("Start returned a stack with its error")
			}
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
				t.Fatalf("Start waited out the test's deadline: %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not mention %q", err, tc.wantErr)
			}
		})
	}
}
