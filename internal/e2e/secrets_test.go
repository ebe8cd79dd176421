package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// The secrets of TestSecretsNeverLeak, each distinct so that a leak names
// its source.
const (
	secretAPIKey    = "sk-e2e-openai-s3cr3t-5f1c"
	secretRedisPass = "redis-s3cr3t-8d2a"
	secretHTTPToken = "http-token-s3cr3t-9b7e"
	secretPipPass   = "pip-s3cr3t-4e6f"
	// NATS passwords, one per role that logs in over the listener.
	secretNATSLLM      = "nats-llm-s3cr3t-81a2"
	secretNATSSandbox  = "nats-sandbox-s3cr3t-77c0"
	secretNATSProducer = "nats-producer-s3cr3t-2d94"
	// The stage cache's signing key, base64 as AUTOCODER_CACHE_KEYS takes it.
	secretCacheKey = "Y2FjaGUta2V5LXMzY3IzdC0xYjNlLWNhY2hlLWtleQ=="
	// A job's secret (options.secrets: DB_PASSWORD), which the sandbox
	// worker has in its environment as AUTOCODER_SECRET_DB_PASSWORD.
	secretJobDB = "db-pass-s3cr3t-6a0d"
)

// envCode is a solution that needs a package (installed through the
// authenticated index's find-links) and writes its whole environment as the
// output env: a secret the sandbox inherited would show in the result.
const envCode = `import argparse
import os

import autocoder_probe


def answer():
    return autocoder_probe.VALUE


def main(argv=None):
    argparse.ArgumentParser(description="the answer").parse_args(argv)
    os.makedirs("/var/outputs", exist_ok=True)
    with open("/var/outputs/env", "w") as f:
        f.write("".join("%s=%s\n" % kv for kv in sorted(os.environ.items())))
    with open("/var/outputs/answer", "w") as f:
        f.write(str(answer()))


if __name__ == "__main__":
    main()
`

// TestSecretsNeverLeak runs the server binaries' code (coordinator, llm and
// sandbox workers) with every secret a deployment has: a model API key, a
// Redis ACL password over TLS, an HTTP API token and a package index with a
// password. It follows a job over the HTTP API and then looks for the
// secrets in every log line (debug level), every event, the result, and
// every file the processes left in their state directories.
func TestSecretsNeverLeak(t *testing.T) {
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(envCode, "autocoder-probe"))
	wheels := t.TempDir()
	buildWheel(t, wheels, "autocoder_probe", "autocoder_probe", "VALUE = 42\n")
	index, indexAuthed := authIndex(t, "pip", secretPipPass)

	redis := testredis.StartServerWith(t, testredis.Options{TLS: true, Users: []testredis.User{{Name: "autocoder", Password: secretRedisPass}}})
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("e2e:read:"+secretHTTPToken+"\n"), 0o600)
	// Through the environment, as an operator sets them: the sandbox must
	// not inherit them either.
	t.Setenv("OPENAI_API_KEY", secretAPIKey)
	t.Setenv("OPENAI_BASE_URL", fake.URL())
	t.Setenv("AUTOCODER_REDIS_URL", redis.UserURL("autocoder", secretRedisPass))
	t.Setenv("AUTOCODER_REDIS_TLS_CA", redis.TLS().CA)
	t.Setenv("AUTOCODER_HTTP_TOKENS_FILE", tokens)
	t.Setenv("AUTOCODER_PIP_INDEX_URL", strings.Replace(index, "://", "://pip:"+secretPipPass+"@", 1)+"/simple")
	t.Setenv("AUTOCODER_PIP_FIND_LINKS", wheels)
	t.Setenv("AUTOCODER_CACHE_KEYS", "e2e:"+secretCacheKey)
	t.Setenv("AUTOCODER_SECRET_DB_PASSWORD", secretJobDB)
	secrets := []string{secretAPIKey, secretRedisPass, secretHTTPToken, secretPipPass,
		secretNATSLLM, secretNATSSandbox, secretNATSProducer, secretCacheKey, secretJobDB}

	fleet := startFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sub, err := wiring.Start(ctx, wiring.Options{Config: fleet.cfg("submit"), ConnectTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	id := client.NewJobID()
	spec := answerSpec()
	spec.Outputs["env"] = messages.TypeStr
	// A job's own variables: a plain one, and a secret the job names and
	// the sandbox worker provides (issue 22).
	spec.Options.EnvVars = map[string]string{"REGION": "north-e2e"}
	spec.Options.Secrets = []string{"DB_PASSWORD"}
	if err := sub.Client.Submit(ctx, id, spec); err != nil {
		t.Fatal(err)
	}
	events := fleet.get(t, "/v1/jobs/"+id+"/events")
	result := fleet.get(t, "/v1/jobs/"+id+"/result")
	var res messages.Result
	if err := json.Unmarshal([]byte(result), &res); err != nil || !res.Success || res.Outputs["answer"] != float64(42) {
		t.Fatalf("result: %v: %s", err, result)
	}
	if env, _ := res.Outputs["env"].(string); !strings.Contains(env, "PATH=") {
		t.Fatalf("the script's output env has no environment: %q", env)
	}
	// The script saw the job's variable and its secret; the secret's value
	// was cut out of what the run returned (the redaction matches the exact
	// value only, so this also shows the sandbox had it).
	if env, _ := res.Outputs["env"].(string); !strings.Contains(env+"\n", "REGION=north-e2e\n") || !strings.Contains(env, "DB_PASSWORD=[secret DB_PASSWORD]\n") {
		t.Errorf("the script's environment lacks the job's variable or its secret: %q", env)
	}
	if !strings.Contains(events, "stage_finished") {
		t.Fatalf("events: %s", events)
	}
	// The secrets were in use, not merely present.
	if reqs := fake.Requests(); len(reqs) == 0 || reqs[0].APIKey != secretAPIKey {
		t.Errorf("the model saw no API key")
	}
	if !indexAuthed() {
		t.Errorf("pip never asked the index with its password")
	}
	// A worker with a wrong Redis password does not start, and says why
	// without the password.
	const wrong = "wr0ng-redis-s3cr3t"
	bad := fleet.cfg("bad-worker")
	bad.RedisURL = redis.UserURL("autocoder", wrong)
	err = wiring.Serve(ctx, wiring.RoleSandboxWorker, wiring.ServeOptions{Config: bad, Logger: slog.New(slog.NewJSONHandler(fleet.logs, nil))})
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") || strings.Contains(err.Error(), wrong) {
		t.Errorf("a worker with a wrong Redis password: %v; want WRONGPASS without the password", err)
	}
	secrets = append(secrets, wrong)
	fleet.stop(t)

	for what, text := range map[string]string{"log": fleet.logs.String(), "events": events, "result": result} {
		for _, s := range secrets {
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, s) {
					t.Errorf("%s shows secret %q: %s", what, s, line)
				}
			}
		}
	}
	if !strings.Contains(fleet.logs.String(), `"level":"DEBUG"`) {
		t.Errorf("no debug log line captured:\n%s", fleet.logs.String())
	}
	for _, dir := range fleet.stateDirs {
		scanFiles(t, dir, secrets)
	}
	scanRedis(t, redis, secretRedisPass, secrets)
}

// redisValue is the whole value of key as text, whatever its type (DUMP
// would compress it).
func redisValue(ctx context.Context, rc *goredis.Client, key string) (string, error) {
	typ, err := rc.Type(ctx, key).Result()
	if err != nil {
		return "", err
	}
	var v any
	switch typ {
	case "string":
		v, err = rc.Get(ctx, key).Result()
	case "hash":
		v, err = rc.HGetAll(ctx, key).Result()
	case "list":
		v, err = rc.LRange(ctx, key, 0, -1).Result()
	case "set":
		v, err = rc.SMembers(ctx, key).Result()
	case "zset":
		v, err = rc.ZRange(ctx, key, 0, -1).Result()
	default:
		return "", fmt.Errorf("type %s", typ)
	}
	return fmt.Sprint(v), err
}

// scanRedis looks for the secrets in every value of the Redis the stage
// cache used: keys, values and hashes alike.
func scanRedis(t *testing.T, srv *testredis.Server, password string, secrets []string) {
	t.Helper()
	tlsCfg, err := srv.TLS().Config()
	if err != nil {
		t.Fatal(err)
	}
	opts, err := goredis.ParseURL(srv.UserURL("autocoder", password))
	if err != nil {
		t.Fatal(err)
	}
	opts.TLSConfig = tlsCfg
	rc := goredis.NewClient(opts)
	defer rc.Close()
	ctx := context.Background()
	n := 0
	iter := rc.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		n++
		dump, err := redisValue(ctx, rc, key)
		if err != nil {
			t.Errorf("read %s: %v", key, err)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(key, s) || strings.Contains(dump, s) {
				t.Errorf("redis key %s holds secret %q", key, s)
			}
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("the stage cache in Redis is empty: nothing was scanned")
	}
}

// authIndex is a package index that answers 404 to every page, and only to
// user:password: pip then takes the package from find-links. authed
// reports whether a request came with the password.
func authIndex(t *testing.T, user, password string) (url string, authed func() bool) {
	var mu sync.Mutex
	ok := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		if u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="index"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		ok = true
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() bool { mu.Lock(); defer mu.Unlock(); return ok }
}

// fleet is the three server roles running in this process, as their
// binaries run them (wiring.Serve), logging at debug level into one buffer.
type fleet struct {
	natsURL, httpURL string
	natsUsers        string // the embedded server's users file
	logs             *lockedBuffer
	stateDirs        []string
	cancel           context.CancelFunc
	wg               sync.WaitGroup
	errs             chan error
	t                *testing.T
}

func startFleet(t *testing.T) *fleet {
	natsPort, httpPort := freePort(t), freePort(t)
	f := &fleet{
		natsURL: fmt.Sprintf("nats://127.0.0.1:%d", natsPort),
		httpURL: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		logs:    &lockedBuffer{}, errs: make(chan error, 3), t: t,
	}
	f.natsUsers = filepath.Join(t.TempDir(), "nats-users.yaml")
	users := fmt.Sprintf("users:\n  - {user: llm, password: %s, role: llm-worker}\n"+
		"  - {user: sandbox, password: %s, role: sandbox-worker}\n  - {user: producer, password: %s, role: producer}\n",
		secretNATSLLM, secretNATSSandbox, secretNATSProducer)
	if err := os.WriteFile(f.natsUsers, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	t.Cleanup(func() { f.stop(t) })
	log := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, role := range []wiring.Role{wiring.RoleCoordinator, wiring.RoleLLMWorker, wiring.RoleSandboxWorker} {
		o := wiring.ServeOptions{Config: f.cfg(string(role)), Logger: log.With("process", role)}
		if role == wiring.RoleCoordinator {
			o.Embedded, o.Config.NATSURL = true, ""
			o.Config.NATSListen = fmt.Sprintf("127.0.0.1:%d", natsPort)
			o.Config.HTTPListen = fmt.Sprintf("127.0.0.1:%d", httpPort)
			o.Config.NATSUsersFile = f.natsUsers
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := wiring.Serve(ctx, role, o); err != nil {
				f.errs <- fmt.Errorf("%s: %w", role, err)
			}
		}()
	}
	waitListening(t, httpPort)
	return f
}

// cfg is one process's settings: the environment's, its own state dir.
func (f *fleet) cfg(name string) config.Config {
	c := config.FromEnv()
	c.StateDir = filepath.Join(f.t.TempDir(), name)
	f.stateDirs = append(f.stateDirs, c.StateDir)
	c.NATSURL, c.MetricsListen = f.natsURL, "127.0.0.1:0"
	c.Sandbox, c.Python, c.LogLevel, c.Concurrency = "process", python, "debug", 2
	// Each process logs in as its role (the coordinator hosts the server).
	switch name {
	case string(wiring.RoleLLMWorker):
		c.NATSUser, c.NATSPassword = "llm", secretNATSLLM
	case string(wiring.RoleSandboxWorker), "bad-worker":
		c.NATSUser, c.NATSPassword = "sandbox", secretNATSSandbox
	case "submit":
		c.NATSUser, c.NATSPassword = "producer", secretNATSProducer
	}
	return c
}

// get reads the API at path with the token, retrying while the job is not
// stored yet.
func (f *fleet) get(t *testing.T, path string) string {
	t.Helper()
	for i := 0; ; i++ {
		// Bounded: the event stream ends only when the job does, and a job
		// that never ends must fail the test, not hang it.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", f.httpURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+secretHTTPToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound && i < 100 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, err, b)
		}
		return string(b)
	}
}

// stop ends the three roles and fails the test if one ended with an error;
// a failed test shows the end of the fleet's logs.
func (f *fleet) stop(t *testing.T) {
	f.cancel()
	f.wg.Wait()
	if t.Failed() {
		logs := f.logs.String()
		t.Logf("fleet logs (last 256 KiB):\n%s", logs[max(0, len(logs)-262144):])
	}
	for {
		select {
		case err := <-f.errs:
			t.Error(err)
		default:
			return
		}
	}
}

// scanFiles fails for every file under dir that holds a secret.
func scanFiles(t *testing.T, dir string, secrets []string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds secret %q", p, s)
			}
		}
		return nil
	})
}

// lockedBuffer is a log sink shared by goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
