package config

import (
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDockerExtraFromEnv: AUTOCODER_DOCKER_EXTRA_COMMANDS is one command
// per line (LF or CRLF), blank lines dropped, each kept as written.
func TestDockerExtraFromEnv(t *testing.T) {
	t.Setenv("AUTOCODER_DOCKER_EXTRA_COMMANDS", "update-ca-certificates\r\n\r\n  \necho 'a; b' > /etc/x\n")
	c := FromEnv()
	want := []string{"update-ca-certificates", "echo 'a; b' > /etc/x"}
	if diff := cmp.Diff(want, c.DockerExtra()); diff != "" {
		t.Errorf("DockerExtra (-want +got):\n%s", diff)
	}
	if got := (&Config{}).DockerExtra(); got != nil {
		t.Errorf("DockerExtra of no commands = %q, want none", got)
	}
}

// TestAccessSettings: the HTTP API's and Redis's access settings come from
// the environment, token auth is the default, and bad combinations are
// refused by name.
func TestAccessSettings(t *testing.T) {
	t.Setenv("AUTOCODER_HTTP_TOKENS_FILE", "/etc/autocoder/tokens")
	t.Setenv("AUTOCODER_HTTP_AUTH", "")
	t.Setenv("AUTOCODER_HTTP_ALLOWED_HOSTS", " coordinator.internal, ,autocoder.example.com")
	t.Setenv("AUTOCODER_REDIS_TLS_CA", "/etc/ssl/redis-ca.pem")
	c := FromEnv()
	if c.HTTPAuth != HTTPAuthToken || c.HTTPTokensFile != "/etc/autocoder/tokens" || c.RedisTLSCA != "/etc/ssl/redis-ca.pem" {
		t.Errorf("FromEnv: auth %q, tokens %q, CA %q", c.HTTPAuth, c.HTTPTokensFile, c.RedisTLSCA)
	}
	if diff := cmp.Diff([]string{"coordinator.internal", "autocoder.example.com"}, c.AllowedHosts()); diff != "" {
		t.Errorf("AllowedHosts (-want +got):\n%s", diff)
	}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{"auth none", func(c *Config) { c.HTTPAuth = HTTPAuthNone }, ""},
		{"unknown auth", func(c *Config) { c.HTTPAuth = "basic" }, "AUTOCODER_HTTP_AUTH"},
		{"a client cert without its key", func(c *Config) { c.RedisTLSCert = "/c.pem" }, "AUTOCODER_REDIS_TLS_KEY"},
		{"cert and key", func(c *Config) { c.RedisTLSCert, c.RedisTLSKey = "/c.pem", "/k.pem" }, ""},
	}
	for _, tc := range tests {
		c := FromEnv()
		c.StateDir = t.TempDir()
		tc.edit(&c)
		err := c.Validate()
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Validate = %v, want an error mentioning %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestAccessFlags(t *testing.T) {
	t.Parallel()
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse([]string{"--http-auth=none", "--http-tokens-file=/t", "--http-allowed-hosts=a,b", "--redis-tls-ca=/ca", "--redis-tls-cert=/c", "--redis-tls-key=/k"}); err != nil {
		t.Fatal(err)
	}
	want := Config{HTTPAuth: "none", HTTPTokensFile: "/t", HTTPAllowedHosts: "a,b", RedisTLSCA: "/ca", RedisTLSCert: "/c", RedisTLSKey: "/k"}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
}

// TestHelpHidesCredentials: --help shows URL defaults from the environment
// without their passwords or tokens; the flags still set the whole URL.
func TestHelpHidesCredentials(t *testing.T) {
	t.Setenv("AUTOCODER_REDIS_URL", "rediss://autocoder:redis-s3cr3t@redis:6380/0")
	t.Setenv("AUTOCODER_PIP_INDEX_URL", "https://tok3n-s3cr3t@pypi.example/simple")
	c := FromEnv()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var help strings.Builder
	fs.SetOutput(&help)
	c.Register(fs)
	fs.PrintDefaults()
	if strings.Contains(help.String(), "s3cr3t") {
		t.Errorf("--help shows a secret:\n%s", help.String())
	}
	if !strings.Contains(help.String(), "rediss://autocoder:xxxxx@redis:6380/0") || !strings.Contains(help.String(), "https://xxxxx@pypi.example/simple") {
		t.Errorf("--help lacks the redacted defaults:\n%s", help.String())
	}
	if err := fs.Parse([]string{"--redis-url=redis://:pw@h:1/0"}); err != nil || c.RedisURL != "redis://:pw@h:1/0" || c.PipIndexURL != "https://tok3n-s3cr3t@pypi.example/simple" {
		t.Errorf("flags: %v, redis %q, index %q", err, c.RedisURL, c.PipIndexURL)
	}
}
