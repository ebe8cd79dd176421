package config

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestNATSAuthSettings: every NATS credential and TLS setting comes from
// its environment variable, can be overridden by its flag, and --help
// lists each without showing a secret.
func TestNATSAuthSettings(t *testing.T) {
	settings := []struct {
		env, flag string
		field     func(*Config) string
	}{
		{"AUTOCODER_NATS_USER", "nats-user", func(c *Config) string { return c.NATSUser }},
		{"AUTOCODER_NATS_PASSWORD", "nats-password", func(c *Config) string { return c.NATSPassword }},
		{"AUTOCODER_NATS_PASSWORD_FILE", "nats-password-file", func(c *Config) string { return c.NATSPasswordFile }},
		{"AUTOCODER_NATS_NKEY_FILE", "nats-nkey-file", func(c *Config) string { return c.NATSNKeyFile }},
		{"AUTOCODER_NATS_CREDS_FILE", "nats-creds-file", func(c *Config) string { return c.NATSCredsFile }},
		{"AUTOCODER_NATS_CA_FILE", "nats-ca-file", func(c *Config) string { return c.NATSCAFile }},
		{"AUTOCODER_NATS_CERT_FILE", "nats-cert-file", func(c *Config) string { return c.NATSCertFile }},
		{"AUTOCODER_NATS_KEY_FILE", "nats-key-file", func(c *Config) string { return c.NATSKeyFile }},
		{"AUTOCODER_NATS_USERS_FILE", "nats-users-file", func(c *Config) string { return c.NATSUsersFile }},
		{"AUTOCODER_NATS_AUTH", "nats-auth", func(c *Config) string { return c.NATSAuth }},
		{"AUTOCODER_NATS_TLS_CERT", "nats-tls-cert", func(c *Config) string { return c.NATSTLSCert }},
		{"AUTOCODER_NATS_TLS_KEY", "nats-tls-key", func(c *Config) string { return c.NATSTLSKey }},
	}
	for _, s := range settings {
		t.Setenv(s.env, "env-"+s.flag)
	}
	t.Setenv("AUTOCODER_NATS_URL", "nats://u:url-secret@nats:4222")
	c := FromEnv()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	c.Register(fs)
	fs.PrintDefaults()
	for _, s := range settings {
		if got := s.field(&c); got != "env-"+s.flag {
			t.Errorf("%s: %q, want the environment's", s.env, got)
		}
		if !strings.Contains(help.String(), "-"+s.flag) || !strings.Contains(help.String(), s.env) {
			t.Errorf("--help does not list -%s (%s)", s.flag, s.env)
		}
	}
	for _, secret := range []string{`"env-nats-password"`, "url-secret"} {
		if strings.Contains(help.String(), secret) {
			t.Errorf("--help shows a secret (%s):\n%s", secret, help.String())
		}
	}
	var args []string
	for _, s := range settings {
		args = append(args, "--"+s.flag+"=flag-"+s.flag)
	}
	if err := fs.Parse(append(args, "--nats-url=nats://h:1")); err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		if got := s.field(&c); got != "flag-"+s.flag {
			t.Errorf("--%s: %q, want the flag's", s.flag, got)
		}
	}
	if c.NATSURL != "nats://h:1" {
		t.Errorf("--nats-url: %q", c.NATSURL)
	}
}

func TestNATSAuthValidate(t *testing.T) {
	for _, tc := range []struct {
		c       NATSAuthConfig
		wantErr string
	}{
		{NATSAuthConfig{}, ""},
		{NATSAuthConfig{NATSAuth: "none"}, ""},
		{NATSAuthConfig{NATSAuth: "off"}, "AUTOCODER_NATS_AUTH"},
		{NATSAuthConfig{NATSAuth: "none", NATSUsersFile: "u.yaml"}, "contradict"},
		{NATSAuthConfig{NATSTLSCert: "c.pem"}, "AUTOCODER_NATS_TLS_KEY"},
	} {
		err := tc.c.validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("validate(%+v) = %v, want %q", tc.c, err, tc.wantErr)
		}
	}
}
