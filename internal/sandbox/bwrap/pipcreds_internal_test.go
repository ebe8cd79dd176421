package bwrap

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPipCredentialsStayOutOfBuilds: pip's configuration reaches a build
// only when it holds no credential (build code can read what is bound into
// its sandbox and leave it where a later run prints it): a config file with
// a user:password URL or a client certificate is left out, whether bound
// from /etc or named by PIP_CONFIG_FILE, and PIP_CLIENT_CERT (a key) is
// never passed. Other PIP_* settings pass. Not parallel: t.Setenv.
func TestPipCredentialsStayOutOfBuilds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := write("clean.conf", "[global]\ntimeout = 60\nindex-url = https://mirror.example/simple\n")
	withPassword := write("password.conf", "[global]\nindex-url = https://deploy:s3cret@mirror.example/simple\n")
	withCert := write("cert.conf", "[global]\nclient-cert = /etc/ssl/private/pip.pem\n")
	write("xdg/pip/pip.conf", "[install]\nextra-index-url = https://u:p@other.example/simple\n")
	for _, tc := range []struct {
		path string
		free bool
	}{
		{clean, true}, {withPassword, false}, {withCert, false},
		{filepath.Join(dir, "xdg"), false}, // a directory: every file under it
		{filepath.Join(dir, "absent.conf"), true},
	} {
		if got := credentialFree(tc.path); got != tc.free {
			t.Errorf("credentialFree(%s) = %v, want %v", tc.path, got, tc.free)
		}
	}

	b := &Backend{log: slog.New(slog.DiscardHandler)}
	t.Setenv("PIP_CLIENT_CERT", "/etc/ssl/private/pip.pem")
	t.Setenv("PIP_DEFAULT_TIMEOUT", "60")
	t.Setenv("PIP_CONFIG_FILE", withPassword)
	env, ro := b.pipEnv()
	if _, ok := env["PIP_CLIENT_CERT"]; ok {
		t.Error("PIP_CLIENT_CERT reached the build")
	}
	if _, ok := env["PIP_CONFIG_FILE"]; ok {
		t.Errorf("a PIP_CONFIG_FILE with a password reached the build (bound: %v)", ro)
	}
	if env["PIP_DEFAULT_TIMEOUT"] != "60" {
		t.Errorf("PIP_DEFAULT_TIMEOUT = %q, want it passed", env["PIP_DEFAULT_TIMEOUT"])
	}
	t.Setenv("PIP_CONFIG_FILE", clean)
	if env, ro := b.pipEnv(); env["PIP_CONFIG_FILE"] != clean || !slices.Contains(ro, clean) {
		t.Errorf("a PIP_CONFIG_FILE without credentials: env %q, bound %v; want it passed and bound", env["PIP_CONFIG_FILE"], ro)
	}
}
