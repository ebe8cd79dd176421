package submit

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProfiles: `submit profile set|use|list|show|env|delete` keep named
// connections in the user's config dir, private (0600), secrets by path
// only; a profile fills what the environment leaves unset, the current one
// only when no NATS URL is set, and never a --local run.
func TestProfiles(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("AUTOCODER_PROFILE", "")
	secretDir := t.TempDir()
	pw := filepath.Join(secretDir, "nats-password")
	token := filepath.Join(secretDir, "token")
	os.WriteFile(pw, []byte("hunter2-nats\n"), 0o600)
	os.WriteFile(token, []byte("hunter2-token\n"), 0o600)
	cfg := testConfig(t)

	code, stdout, stderr := runCLI(t, cfg, "profile", "set", "prod", "--nats-url", "nats://nats.example:4222", "--user", "producer",
		"--password-file", pw, "--http-url", "http://autocoder.example:8080", "--token-file", token)
	if code != ExitSuccess || !strings.Contains(stdout, "profile prod saved") || !strings.Contains(stdout, "current") {
		t.Fatalf("profile set: exit %d\n%s%s", code, stdout, stderr)
	}
	path := filepath.Join(home, "autocoder", "profiles.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("profiles file: %v, mode %v; want 0600", err, fi.Mode())
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), pw) {
		t.Errorf("profiles file keeps a secret, or not its path:\n%s", b)
	}
	runCLI(t, cfg, "profile", "set", "staging", "--nats-url", "nats://staging:4222")

	for _, args := range [][]string{{"profile", "list"}, {"profile", "show"}, {"profile", "show", "prod", "-o", "json"}, {"profile", "env"}, {"profile", "list", "-o", "yaml"}} {
		code, stdout, stderr := runCLI(t, cfg, args...)
		if code != ExitSuccess || strings.Contains(stdout+stderr, "hunter2") || !strings.Contains(stdout, "nats.example") {
			t.Errorf("%q: exit %d, a secret shown or the profile missing:\n%s%s", args, code, stdout, stderr)
		}
	}
	if _, stdout, _ := runCLI(t, cfg, "profile", "list"); !regexp.MustCompile(`(?m)^\* +prod `).MatchString(stdout) {
		t.Errorf("profile list does not mark the current one:\n%s", stdout)
	}
	if _, stdout, _ := runCLI(t, cfg, "profile", "env"); !strings.Contains(stdout, "export AUTOCODER_NATS_PASSWORD_FILE='"+pw+"'") ||
		!strings.Contains(stdout, "export AUTOCODER_URL='http://autocoder.example:8080'") {
		t.Errorf("profile env:\n%s", stdout)
	}

	// The current profile fills an empty configuration.
	got, _, err := withProfile(cfg, []string{"status", "job-1"})
	if err != nil || got.NATSURL != "nats://nats.example:4222" || got.NATSUser != "producer" || got.NATSPasswordFile != pw {
		t.Errorf("current profile: %v, %q %q %q", err, got.NATSURL, got.NATSUser, got.NATSPasswordFile)
	}
	// A NATS URL from the environment names another deployment: no current profile.
	env := cfg
	env.NATSURL = "nats://other:4222"
	if got, _, _ := withProfile(env, []string{"status", "job-1"}); got.NATSUser != "" {
		t.Errorf("the environment's URL did not win over the current profile: user %q", got.NATSUser)
	}
	// --profile, anywhere, names one; the environment still wins field by field.
	got, args, err := withProfile(env, []string{"status", "--profile", "prod", "job-1"})
	if err != nil || got.NATSURL != "nats://other:4222" || got.NATSUser != "producer" || strings.Join(args, " ") != "status job-1" {
		t.Errorf("--profile prod: %v, url %q user %q args %q", err, got.NATSURL, got.NATSUser, args)
	}
	// So does one given as a flag, in any form: the current profile's
	// credentials do not go to another server.
	for _, args := range [][]string{{"status", "job-1", "--nats-url", "nats://other:4222"}, {"status", "-nats-url=nats://other:4222", "job-1"}} {
		if got, _, _ := withProfile(cfg, args); got.NATSUser != "" || got.NATSPasswordFile != "" {
			t.Errorf("%q: the current profile's credentials went with it: user %q", args, got.NATSUser)
		}
	}
	for _, args := range [][]string{{"--local", "--prompt", "x"}, {"--local=true", "--prompt", "x"}} {
		if got, _, _ := withProfile(cfg, args); got.NATSURL != "" {
			t.Errorf("%q took the profile's NATS %q", args, got.NATSURL)
		}
	}
	if code, _, stderr := runCLI(t, cfg, "status", "job-1", "--profile", "nope"); code != ExitUsage || !strings.Contains(stderr, "profile nope: not saved") {
		t.Errorf("--profile nope: exit %d %q", code, stderr)
	}

	// Switching, refusing, deleting.
	if code, stdout, _ := runCLI(t, cfg, "profile", "use", "staging"); code != ExitSuccess || !strings.Contains(stdout, "staging is the current") {
		t.Errorf("profile use: exit %d %q", code, stdout)
	}
	if code, _, stderr := runCLI(t, cfg, "profile", "set", "x", "--password-file", filepath.Join(secretDir, "missing")); code != ExitUsage || !strings.Contains(stderr, "password-file") {
		t.Errorf("a missing password file: exit %d %q", code, stderr)
	}
	for _, u := range []string{"nats://producer:hunter2@nats.example:4222", "nats://a:4222,nats://u:hunter2@b:4222"} {
		if code, stdout, stderr := runCLI(t, cfg, "profile", "set", "withpw", "--nats-url", u); code != ExitUsage || !strings.Contains(stderr, "password-file") || strings.Contains(stdout+stderr, "hunter2") {
			t.Errorf("a password in the URL %s: exit %d %q", u, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, cfg, "profile", "set", "bad/name", "--user", "u"); code != ExitUsage || !strings.Contains(stderr, "profile") {
		t.Errorf("a bad name: exit %d %q", code, stderr)
	}
	if code, _, _ := runCLI(t, cfg, "profile", "delete", "staging"); code != ExitSuccess {
		t.Errorf("profile delete: exit %d", code)
	}
	if code, _, stderr := runCLI(t, cfg, "profile", "show"); code != ExitUsage || !strings.Contains(stderr, "no current profile") {
		t.Errorf("profile show with none current: exit %d %q", code, stderr)
	}
}

// TestOutputYAML: -o yaml has the JSON names, in their order, as block YAML.
func TestOutputYAML(t *testing.T) {
	var b strings.Builder
	v := struct {
		JobID  string         `json:"job_id"`
		Status string         `json:"status"`
		Counts map[string]int `json:"counts"`
		Text   string         `json:"text"`
	}{"job-1", "true", map[string]int{"running": 1}, "a: b"}
	if err := printAs(&b, formatYAML, v); err != nil {
		t.Fatal(err)
	}
	want := "job_id: job-1\nstatus: \"true\"\ncounts:\n  running: 1\ntext: 'a: b'\n"
	if b.String() != want {
		t.Errorf("yaml:\n%s\nwant:\n%s", b.String(), want)
	}
}
