package wiring_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/wiring"
)

// TestServeFailsCleanly: a server that cannot start returns one error that
// says why, at once, instead of serving.
func TestServeFailsCleanly(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("read 0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unlabelled := filepath.Join(t.TempDir(), "transcript.json")
	if err := os.WriteFile(unlabelled, []byte(`{"replies": {"plan": [{}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	remote := func(c *config.Config) { c.NATSURL = "nats://127.0.0.1:1" } // never reached: the transcript fails first
	tests := []struct {
		name     string
		role     wiring.Role
		embedded bool
		edit     func(*config.Config)
		wantErr  string
	}{
		{"a worker without NATS", wiring.RoleLLMWorker, false, func(*config.Config) {}, "a coordinator --embedded hosts one"},
		{"--embedded is the coordinator's", wiring.RoleSandboxWorker, true, func(*config.Config) {}, "no NATS to join"},
		{"a coordinator without NATS", wiring.RoleCoordinator, false, func(*config.Config) {}, "run coordinator --embedded"},
		{"the embedded NATS port is taken", wiring.RoleCoordinator, true, func(c *config.Config) { c.NATSListen = busy.Addr().String() }, "address already in use"},
		{"the embedded NATS has no users", wiring.RoleCoordinator, true, func(c *config.Config) { c.NATSAuth = "" }, "AUTOCODER_NATS_USERS_FILE"},
		{"a bad NATS auth setting", wiring.RoleCoordinator, true, func(c *config.Config) { c.NATSAuth = "off" }, "AUTOCODER_NATS_AUTH"},
		{"the HTTP port is taken", wiring.RoleCoordinator, true, func(c *config.Config) { c.HTTPListen = busy.Addr().String() }, "listen " + busy.Addr().String()},
		{"not a server role", wiring.RoleLocal, false, func(*config.Config) {}, `unknown role "local"`},
		{"a bad setting", wiring.RoleCoordinator, true, func(c *config.Config) { c.Sandbox = "vm" }, "AUTOCODER_SANDBOX"},
		{"a coordinator without HTTP tokens", wiring.RoleCoordinator, true, func(c *config.Config) { c.HTTPTokensFile = "" }, "AUTOCODER_HTTP_TOKENS_FILE"},
		{"a tokens file that is not there", wiring.RoleCoordinator, true, func(c *config.Config) { c.HTTPTokensFile += ".missing" }, "http tokens"},
		{"a transcript that is not there", wiring.RoleLLMWorker, false, func(c *config.Config) { remote(c); c.Transcript = unlabelled + ".missing" },
			"AUTOCODER_TRANSCRIPT: stat " + unlabelled + ".missing: no such file"},
		{"a transcript that does not say it is scripted", wiring.RoleLLMWorker, false, func(c *config.Config) { remote(c); c.Transcript = unlabelled },
			"label is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.FromEnv()
			cfg.StateDir = t.TempDir()
			cfg.NATSURL, cfg.RedisURL = "", ""
			cfg.NATSListen, cfg.HTTPListen = "127.0.0.1:0", "127.0.0.1:0"
			cfg.HTTPAuth, cfg.HTTPTokensFile = config.HTTPAuthToken, tokens
			cfg.NATSAuth, cfg.NATSUsersFile = config.NATSAuthNone, "" // authentication is tested on its own
			tc.edit(&cfg)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			err := wiring.Serve(ctx, tc.role, wiring.ServeOptions{Config: cfg, Embedded: tc.embedded})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Serve = %v, want an error mentioning %q", err, tc.wantErr)
			}
			if ctx.Err() != nil {
				t.Errorf("Serve waited out the test's deadline")
			}
		})
	}
}
