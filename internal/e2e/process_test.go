package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestServerBinariesAsSeparateProcesses runs coordinator --embedded,
// llm-worker and sandbox-worker as three processes on one NATS, and the
// submit binary as a fourth that joins it over TCP. The listener takes the
// users of a users file, each with its role: a plain password, a bcrypt
// hash with the password in a file, an nkey; a connection without
// credentials is refused.
func TestServerBinariesAsSeparateProcesses(t *testing.T) {
	requireSandboxTools(t)
	bin := buildCommands(t, "./cmd/...")
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))

	port := freePort(t)
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", port)
	base := cleanEnv()
	start := func(name string, env []string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Env = append(append([]string{}, base...), env...)
		cmd.Env = append(cmd.Env, "AUTOCODER_STATE_DIR="+t.TempDir(), "AUTOCODER_LOG_LEVEL=warn")
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s exited with %v after SIGTERM\n%s", name, err, logs.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Errorf("%s did not stop within 30s of SIGTERM\n%s", name, logs.String())
			}
		})
		return cmd
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("read process-test-token-0123456789\n"), 0o600)
	creds := writeNATSUsers(t)
	start("coordinator", []string{fmt.Sprintf("AUTOCODER_NATS_LISTEN=127.0.0.1:%d", port), "AUTOCODER_HTTP_LISTEN=127.0.0.1:0",
		"AUTOCODER_HTTP_TOKENS_FILE=" + tokens, "AUTOCODER_NATS_USERS_FILE=" + creds.usersFile}, "--embedded")
	waitListening(t, port)
	if nc, err := nats.Connect(natsURL); err == nil {
		nc.Close()
		t.Fatal("a connection without credentials was let in")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Fatalf("a connection without credentials: %v, want an authorization violation", err)
	}
	start("llm-worker", []string{"AUTOCODER_NATS_URL=" + natsURL, "OPENAI_BASE_URL=" + fake.URL(), "OPENAI_API_KEY=test",
		"AUTOCODER_NATS_USER=llm-1", "AUTOCODER_NATS_PASSWORD=llm-secret"})
	start("sandbox-worker", []string{"AUTOCODER_NATS_URL=" + natsURL, "AUTOCODER_PYTHON=" + python, "AUTOCODER_SANDBOX=process"},
		"--nats-user=sandbox-1", "--nats-password-file="+creds.sandboxPasswordFile)

	job := filepath.Join(t.TempDir(), "job.yaml")
	os.WriteFile(job, []byte("prompt: Compute the answer (42) and write it as the output answer.\noutputs: {answer: int}\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	submit := exec.CommandContext(ctx, filepath.Join(bin, "submit"), "--json", job)
	submit.Env = append(append([]string{}, base...), "AUTOCODER_NATS_URL="+natsURL, "AUTOCODER_STATE_DIR="+t.TempDir(),
		"AUTOCODER_NATS_NKEY_FILE="+creds.producerSeedFile)
	var stdout, stderr bytes.Buffer
	submit.Stdout, submit.Stderr = &stdout, &stderr
	err := submit.Run()
	if err != nil {
		t.Fatalf("submit: %v\nstderr:\n%s", err, stderr.String())
	}
	var res messages.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("result: %v\n%s", err, stdout.String())
	}
	if !res.Success || res.Outputs["answer"] != float64(42) {
		t.Fatalf("result: success %v, outputs %v, error %s", res.Success, res.Outputs, res.Error)
	}
	workers := map[string]bool{}
	for _, s := range res.Stages {
		workers[string(s.Name)] = true
	}
	if !workers["code"] || !workers["run_tests"] {
		t.Errorf("stages %v", stageNames(&res))
	}

	// The producer's other commands work within its permissions: lookups,
	// the task bucket, and a run of the script (a rerun job on the workers).
	for _, args := range [][]string{{"status", res.JobID}, {"events", res.JobID}, {"result", res.JobID},
		{"task", "register", "answer", res.JobID}, {"task", "list"}, {"task", "show", "answer"},
		{"run", res.JobID, "--json"}, {"task", "delete", "answer"}} {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "submit"), args...)
		cmd.Env = submit.Env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("submit %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	codeModeAcrossProcesses(ctx, t, filepath.Join(bin, "submit"), submit.Env, natsURL, fake) // codemode_test.go
}

// natsCreds are the files of writeNATSUsers.
type natsCreds struct {
	usersFile, sandboxPasswordFile, producerSeedFile string
}

// writeNATSUsers writes a users file with an llm-worker (plain password
// llm-secret), a sandbox-worker (bcrypt hash; its password in a file) and a
// producer (nkey; its seed in a file).
func writeNATSUsers(t *testing.T) natsCreds {
	t.Helper()
	dir := t.TempDir()
	c := natsCreds{usersFile: filepath.Join(dir, "users.yaml"), sandboxPasswordFile: filepath.Join(dir, "sandbox.password"),
		producerSeedFile: filepath.Join(dir, "producer.nk")}
	hash, err := bcrypt.GenerateFromPassword([]byte("sandbox-secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	users := fmt.Sprintf("users:\n  - {user: llm-1, password: llm-secret, role: llm-worker}\n"+
		"  - {user: sandbox-1, password: %q, role: sandbox-worker}\n  - {nkey: %s, role: producer}\n"+
		"  - {user: tools-1, password: tools-secret, role: tool-server, tools: [double]}\n", hash, pub)
	for path, data := range map[string]string{c.usersFile: users, c.sandboxPasswordFile: "sandbox-secret\n", c.producerSeedFile: string(seed)} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "AUTOCODER_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListening(t testing.TB, port int) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on port %d after 30s", port)
}
