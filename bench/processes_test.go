package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/wiring"
)

// binariesBuilt says binaries ran, so TestMain has a directory to remove.
var binariesBuilt atomic.Bool

// binaries builds the server binaries once per benchmark process.
var binaries = sync.OnceValues(func() (string, error) {
	binariesBuilt.Store(true)
	dir, err := os.MkdirTemp("", "autocoder-bench-bin-")
	if err != nil {
		return "", err
	}
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", dir, "./cmd/coordinator", "./cmd/llm-worker", "./cmd/sandbox-worker")
	cmd.Dir = filepath.Dir(root) // bench/ is one below the module root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return dir, nil
})

// fleet is autocoder as separate processes on one machine, authentication
// on: coordinator --embedded (the NATS server, users from a users file),
// one llm-worker and n sandbox-workers, each with its own credentials.
type fleet struct {
	natsURL  string
	producer string // the producer's nkey seed file
	procs    []*proc
}

// proc is one running binary and its log.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   *sync.Mutex
}

// fleetConfig says what to start.
type fleetConfig struct {
	modelURL       string
	sandboxWorkers int
	// warm is AUTOCODER_WARM_RUNNER for the sandbox-workers ("" leaves it
	// unset: the build's default).
	warm string
}

func startFleet(b *testing.B, fc fleetConfig) *fleet {
	b.Helper()
	bin, err := binaries()
	if err != nil {
		b.Fatal(err)
	}
	users := writeUsers(b, fc.sandboxWorkers)
	port := freePort(b)
	f := &fleet{natsURL: fmt.Sprintf("nats://127.0.0.1:%d", port), producer: users.producerSeed}
	b.Cleanup(f.stop)
	f.start(b, bin, "coordinator", []string{fmt.Sprintf("AUTOCODER_NATS_LISTEN=127.0.0.1:%d", port),
		"AUTOCODER_HTTP_LISTEN=127.0.0.1:0", "AUTOCODER_HTTP_TOKENS_FILE=" + users.httpTokens, "AUTOCODER_NATS_USERS_FILE=" + users.file}, "--embedded")
	if !listening(port) {
		b.Fatalf("the coordinator does not listen on port %d after a minute\n%s", port, f.logs())
	}
	f.start(b, bin, "llm-worker", []string{"AUTOCODER_NATS_URL=" + f.natsURL, "OPENAI_BASE_URL=" + fc.modelURL, "OPENAI_API_KEY=bench",
		"AUTOCODER_NATS_USER=llm-1", "AUTOCODER_NATS_PASSWORD=llm-secret", "AUTOCODER_CONCURRENCY=16"})
	for i := 1; i <= fc.sandboxWorkers; i++ {
		env := []string{"AUTOCODER_NATS_URL=" + f.natsURL, "AUTOCODER_PYTHON=" + python, "AUTOCODER_SANDBOX=process",
			fmt.Sprintf("AUTOCODER_NATS_USER=sandbox-%d", i), "AUTOCODER_NATS_PASSWORD_FILE=" + users.sandboxPassword}
		if fc.warm != "" {
			env = append(env, "AUTOCODER_WARM_RUNNER="+fc.warm)
		}
		f.start(b, bin, "sandbox-worker", env)
	}
	return f
}

// start runs one binary with a clean environment plus env.
func (f *fleet) start(b *testing.B, bin, name string, env []string, args ...string) {
	b.Helper()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Env = append(cmd.Env, "AUTOCODER_STATE_DIR="+b.TempDir(), "AUTOCODER_LOG_LEVEL=warn")
	p := &proc{name: name, cmd: cmd, logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	w := lockedWriter{p}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	f.procs = append(f.procs, p)
}

// stop ends the processes, workers first, each with SIGTERM and then,
// after 30 s, SIGKILL.
func (f *fleet) stop() {
	for i := len(f.procs) - 1; i >= 0; i-- {
		p := f.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
}

// logs is every process's log, for a failure message.
func (f *fleet) logs() string {
	var s strings.Builder
	for _, p := range f.procs {
		p.mu.Lock()
		fmt.Fprintf(&s, "--- %s\n%s", p.name, p.logs.String())
		p.mu.Unlock()
	}
	return s.String()
}

type lockedWriter struct{ p *proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.logs.Len() > 1<<20 {
		return len(b), nil // enough to say what went wrong
	}
	return w.p.logs.Write(b)
}

// client joins the fleet as a producer (its nkey).
func (f *fleet) client(b *testing.B) *wiring.Stack {
	b.Helper()
	cfg := config.FromEnv()
	cfg.NATSURL, cfg.NATSNKeyFile, cfg.StateDir, cfg.LogLevel = f.natsURL, f.producer, b.TempDir(), "warn"
	cfg.NATSUser, cfg.NATSPassword, cfg.NATSPasswordFile, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "", "", "", "", ""
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg})
	if err != nil {
		b.Fatalf("join as a producer: %v\n%s", err, f.logs())
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// users are the files of writeUsers.
type users struct{ file, sandboxPassword, producerSeed, httpTokens string }

// writeUsers writes a NATS users file: an llm-worker (plain password),
// n sandbox-workers (one bcrypt-hashed password, in a file) and a
// producer (an nkey, its seed in a file).
func writeUsers(b *testing.B, n int) users {
	b.Helper()
	dir := b.TempDir()
	u := users{file: filepath.Join(dir, "users.yaml"), sandboxPassword: filepath.Join(dir, "sandbox.password"), producerSeed: filepath.Join(dir, "producer.nk"),
		httpTokens: filepath.Join(dir, "http.tokens")}
	hash, err := bcrypt.GenerateFromPassword([]byte("sandbox-secret"), bcrypt.MinCost)
	if err != nil {
		b.Fatal(err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		b.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	var s strings.Builder
	s.WriteString("users:\n  - {user: llm-1, password: llm-secret, role: llm-worker}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&s, "  - {user: sandbox-%d, password: %q, role: sandbox-worker}\n", i, hash)
	}
	fmt.Fprintf(&s, "  - {nkey: %s, role: producer}\n", pub)
	for path, data := range map[string]string{u.file: s.String(), u.sandboxPassword: "sandbox-secret\n", u.producerSeed: string(seed),
		u.httpTokens: "read bench-token-0123456789abcdef\n"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return u
}

// cleanEnv is the environment without autocoder's and the model's settings.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AUTOCODER_") {
			out = append(out, kv)
		}
	}
	return out
}

func freePort(b testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// listening waits up to a minute for something to listen on port.
func listening(port int) bool {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
