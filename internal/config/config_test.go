package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
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

// TestCacheKeys: the keys come from AUTOCODER_CACHE_KEYS or a key file;
// errors name the setting and the entry, and neither they nor -help ever
// show a secret.
func TestCacheKeys(t *testing.T) {
	const secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0" // "secret-secret-secret-secret"
	t.Setenv("AUTOCODER_CACHE_KEYS", "k2:"+secret+",k1:"+secret+"!!")
	t.Setenv("AUTOCODER_CACHE_KEY_FILE", "")
	t.Setenv("AUTOCODER_CACHE_UNSIGNED", "")
	c := FromEnv()
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "AUTOCODER_CACHE_KEYS: entry 2: key k1: the secret is not base64") {
		t.Errorf("Validate = %v, want it to name entry 2", err)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("Validate error %q shows the secret", err)
	}

	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var help strings.Builder
	fs.SetOutput(&help)
	c.Register(fs)
	fs.PrintDefaults()
	if strings.Contains(help.String(), secret) {
		t.Errorf("-help shows the secret:\n%s", help.String())
	}
	if err := fs.Parse([]string{"--cache-keys", "k3:" + secret}); err != nil {
		t.Fatal(err)
	}
	k, err := c.CacheKeyring()
	if err != nil || k.SigningID() != "k3" {
		t.Fatalf("CacheKeyring after --cache-keys = %v, %v", k, err)
	}

	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte("# rotated 2026-11\nnew:"+secret+"\nold:"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = Config{CacheKeyFile: file}
	if k, err := c.CacheKeyring(); err != nil || strings.Join(k.IDs(), ",") != "new,old" {
		t.Errorf("CacheKeyring from a file = %v, %v", k, err)
	}
	for _, bad := range []Config{
		{CacheKeys: "a:" + secret, CacheKeyFile: file},
		{CacheKeys: "a:" + secret, CacheUnsigned: true},
		{CacheKeyFile: filepath.Join(t.TempDir(), "missing")},
	} {
		if _, err := bad.CacheKeyring(); err == nil {
			t.Errorf("CacheKeyring(%+v): no error", bad.CacheKeyFile)
		}
	}
	if k, err := (&Config{}).CacheKeyring(); k != nil || err != nil {
		t.Errorf("CacheKeyring with no keys = %v, %v; want none", k, err)
	}
}

func TestStageDeadlines(t *testing.T) {
	t.Setenv("AUTOCODER_STAGE_DEADLINES", " build=45m, plan=5m,run_tests=1h30m ")
	c := FromEnv()
	got, err := c.Deadlines(messages.DefaultStages())
	if err != nil {
		t.Fatal(err)
	}
	want := map[messages.Stage]time.Duration{messages.StageBuild: 45 * time.Minute, messages.StagePlan: 5 * time.Minute,
		messages.StageRunTests: 90 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deadlines (-want +got):\n%s", diff)
	}
	if got, err := (&Config{}).Deadlines(messages.DefaultStages()); err != nil || got != nil {
		t.Errorf("no deadlines: %v, %v; want none", got, err)
	}
	for value, bad := range map[string]string{
		"build=45m,biuld=5m": `"biuld=5m"`,
		"plan":               `"plan"`,
		"plan=soon":          `"plan=soon"`,
		"plan=5m,code=-1m":   `"code=-1m"`,
		"fix=0s":             `"fix=0s"`,
	} {
		c := Config{StageDeadlines: value, StateDir: "/tmp", LogLevel: "info"}
		_, err := c.Deadlines(messages.DefaultStages())
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "AUTOCODER_STAGE_DEADLINES") {
			t.Errorf("%q: err = %v, want one naming %s", value, err, bad)
		}
		if verr := c.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("%q: Validate = %v, want the same error", value, verr)
		}
	}
}

// TestRunCeilings: the sandbox-worker's ceilings come from the environment
// or their flags; unset means the worker's defaults (zero); a bad value
// fails Validate with the setting's name.
func TestRunCeilings(t *testing.T) {
	t.Setenv("AUTOCODER_MAX_RUN_TIMEOUT", "20m")
	t.Setenv("AUTOCODER_MAX_MEMORY", "4Gi")
	t.Setenv("AUTOCODER_MAX_CPUS", "")
	c := FromEnv()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse([]string{"--max-cpus", "1.5"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Ceilings()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(RunCeilings{Timeout: 20 * time.Minute, Memory: 4 << 30, CPUs: 1.5}, got); diff != "" {
		t.Errorf("Ceilings (-want +got):\n%s", diff)
	}
	if got, err := (&Config{}).Ceilings(); err != nil || got != (RunCeilings{}) {
		t.Errorf("Ceilings of nothing set = %+v, %v; want zeros (the defaults)", got, err)
	}
	for setting, bad := range map[string]Config{
		"AUTOCODER_MAX_RUN_TIMEOUT": {MaxRunTimeout: "-1h"},
		"AUTOCODER_MAX_MEMORY":      {MaxMemory: "1Ki"},
		"AUTOCODER_MAX_CPUS":        {MaxCPUs: "NaN"},
	} {
		bad.StateDir, bad.LogLevel = t.TempDir(), "info"
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), setting) {
			t.Errorf("Validate with a bad %s = %v, want an error naming it", setting, err)
		}
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
		{"auth none", func(c *Config) { c.HTTPAuth, c.HTTPTokensFile = HTTPAuthNone, "" }, ""},
		// The tokens would be dropped and the API served open.
		{"auth none with a tokens file", func(c *Config) { c.HTTPAuth = HTTPAuthNone }, "AUTOCODER_HTTP_TOKENS_FILE contradict"},
		{"token auth with a tokens file", func(c *Config) { c.HTTPAuth = HTTPAuthToken }, ""},
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
	if diff := cmp.Diff(want, c, cmp.AllowUnexported(Config{})); diff != "" {
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

// TestModelBounds: the llm-worker's reply and prompt bounds come from the
// environment or their flags as quantities; a bad one names its setting.
func TestModelBounds(t *testing.T) {
	t.Setenv("AUTOCODER_MAX_REPLY_BYTES", "2Mi")
	t.Setenv("AUTOCODER_MAX_PROMPT_BYTES", "")
	c := FromEnv()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse([]string{"--max-prompt-bytes", "128Ki"}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Bounds()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ModelBounds{ReplyBytes: 2 << 20, PromptBytes: 128 << 10}, got); diff != "" {
		t.Errorf("Bounds (-want +got):\n%s", diff)
	}
	if got, err := (&Config{}).Bounds(); err != nil || got != (ModelBounds{}) {
		t.Errorf("Bounds of nothing set = %+v, %v; want zeros (the defaults)", got, err)
	}
	for setting, bad := range map[string]Config{
		"AUTOCODER_MAX_REPLY_BYTES":  {MaxReplyBytes: "lots"},
		"AUTOCODER_MAX_PROMPT_BYTES": {MaxPromptBytes: "2Gi"},
	} {
		bad.StateDir, bad.LogLevel = t.TempDir(), "info"
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), setting) {
			t.Errorf("Validate with a bad %s = %v, want an error naming it", setting, err)
		}
	}
}

// TestSandboxDiskQuota: the setting is a quantity, 0 when unset (the
// backends' default), and refused below 1Mi with its name.
func TestSandboxDiskQuota(t *testing.T) {
	t.Setenv("AUTOCODER_SANDBOX_DISK_QUOTA", "64Mi")
	c := FromEnv()
	if q, err := c.SandboxDiskQuota(); err != nil || q != 64<<20 {
		t.Errorf("64Mi: %d, %v", q, err)
	}
	if q, err := (&Config{}).SandboxDiskQuota(); err != nil || q != 0 {
		t.Errorf("unset: %d, %v", q, err)
	}
	for _, bad := range []string{"1Ki", "lots", "-1Gi"} {
		if _, err := (&Config{DiskQuota: bad}).SandboxDiskQuota(); err == nil || !strings.Contains(err.Error(), "AUTOCODER_SANDBOX_DISK_QUOTA") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestBadNumbersAreErrors: a setting that is not a number where one is
// wanted is an error naming the variable, not silently the default.
func TestBadNumbersAreErrors(t *testing.T) {
	for _, tc := range []struct{ env, value string }{
		{"AUTOCODER_CONCURRENCY", "four"},
		{"AUTOCODER_CONCURRENCY", "4 slots"},
		{"AUTOCODER_DOCKER_POOL_SIZE", "2.5"},
		{"AUTOCODER_WARM_RUNNER", "yes"},
		{"AUTOCODER_CACHE_UNSIGNED", "yes please"},
		{"AUTOCODER_MAX_CPUS", "many"},
		{"AUTOCODER_MAX_OUTPUT_FILES", "lots"},
		{"AUTOCODER_MAX_PROMPT_BYTES", "big"},
		{"AUTOCODER_NATS_MONITOR_LISTEN", "127.0.0.1:http"},
		{"AUTOCODER_SANDBOX_DISK_QUOTA", "lots"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			c := FromEnv()
			c.StateDir = t.TempDir()
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.env) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.env)
			}
		})
	}
	t.Setenv("AUTOCODER_CONCURRENCY", " 6 ")
	t.Setenv("AUTOCODER_CACHE_UNSIGNED", "1")
	c := FromEnv()
	c.StateDir = t.TempDir()
	if err := c.Validate(); err != nil || c.Concurrency != 6 || !c.CacheUnsigned {
		t.Errorf("good values: %v, concurrency %d, unsigned %v", err, c.Concurrency, c.CacheUnsigned)
	}
}

// TestCacheTTL: a month unless set; 0 keeps results for ever; a negative
// or unreadable one is refused, naming the variable.
func TestCacheTTL(t *testing.T) {
	for _, tc := range []struct {
		env     string
		want    time.Duration
		wantErr bool
	}{{"", DefaultCacheTTL, false}, {"0", 0, false}, {"72h", 72 * time.Hour, false}, {"-1h", 0, true}, {"a week", 0, true}} {
		t.Setenv("AUTOCODER_CACHE_TTL", tc.env)
		c := FromEnv()
		err := c.Validate()
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), "AUTOCODER_CACHE_TTL") {
				t.Errorf("%q: %v, want an error naming AUTOCODER_CACHE_TTL", tc.env, err)
			}
			continue
		}
		if c.CacheTTL != tc.want {
			t.Errorf("%q: CacheTTL %v, want %v", tc.env, c.CacheTTL, tc.want)
		}
	}
}
