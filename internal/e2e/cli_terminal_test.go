package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// slowTests pass after a few seconds: long enough to interrupt the CLI
// that follows the job, short enough to follow it again to its end.
const slowTests = `import time

from solution import answer


def test_answer():
    time.sleep(4)
    assert answer() == 42
`

// TestCLITerminal runs the real submit binary, as a user at a terminal
// would, against a deployment in this process (coordinator, workers on
// bubblewrap, an embedded NATS the CLI joins):
//
//   - `submit JOBFILE`, Ctrl-C: exit 130, and the hint is `submit watch`;
//     `submit watch JOB` then follows the job to its end (progress on
//     stderr, the summary on stdout, exit 0);
//   - `submit list` (table and -o yaml) shows the job as succeeded;
//   - `--version`; `completion bash` loaded into a real bash completes
//     `submit ta` to `task`;
//   - a bad --option with a job file is refused (exit 2) with the field named;
//   - `--wait 0` prints the job id alone on stdout and exits 0, as does a
//     --wait that runs out;
//   - `task register` refuses an existing name unless --replace;
//   - `pool pause|resume` switches the pool's entry in the pools bucket;
//   - an unreachable NATS is one line and exit 3.
func TestCLITerminal(t *testing.T) {
	requireSandboxTools(t)
	bin := buildSubmit(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptWithTests(fake, slowTests, sol(code("6 * 7")))
	cfg := testConfig(t, fake)
	cfg.NATSAuth = config.NATSAuthNone
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}, EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	defer st.Close()
	env := append(cleanEnv(), fmt.Sprintf("AUTOCODER_NATS_URL=nats://127.0.0.1:%d", port),
		"AUTOCODER_STATE_DIR="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "job.yaml")
	os.WriteFile(jobFile, []byte("prompt: Compute the answer (42) and write it as the output answer.\noutputs: {answer: int}\noptions: {timeout: 120}\n"), 0o644)

	jobID := interruptThenWatch(t, ctx, bin, env, jobFile)

	out, err := runSubmitSplit(ctx, bin, env, "list")
	if err != nil || !regexp.MustCompile(`(?m)^`+jobID+` +succeeded `).MatchString(out.stdout) || !strings.HasPrefix(out.stdout, "JOB ") {
		t.Errorf("submit list: %v\n%s%s", err, out.stdout, out.stderr)
	}
	out, err = runSubmitSplit(ctx, bin, env, "list", "-o", "yaml", "--status", "succeeded")
	if err != nil || !strings.Contains(out.stdout, "- v: 1\n") && !strings.Contains(out.stdout, "job_id: "+jobID+"\n") {
		t.Errorf("submit list -o yaml: %v\n%s%s", err, out.stdout, out.stderr)
	}
	if out, err := runSubmitSplit(ctx, bin, env, "list", "--status", "lost"); exitCodeOf(err) != 2 || !strings.Contains(out.stderr, "--status") {
		t.Errorf("submit list --status lost: %v %q, want exit 2", err, out.stderr)
	}

	if out, err := runSubmitSplit(ctx, bin, env, "--version"); err != nil || !strings.HasPrefix(out.stdout, "submit ") {
		t.Errorf("submit --version: %v %q", err, out.stdout)
	}
	checkBashCompletion(t, ctx, bin, env)

	// A bad --option with a job file: refused before anything is submitted, the field named.
	out, err = runSubmitSplit(ctx, bin, env, jobFile, "--option", "max_iterations=three")
	if exitCodeOf(err) != 2 || !strings.Contains(out.stderr, "options.max_iterations") || strings.Contains(out.stderr, "submitted") {
		t.Errorf("bad --option with a job file: %v, stderr %q; want exit 2 naming options.max_iterations", err, out.stderr)
	}

	// --wait 0: the id, at once; --wait 1s on a job that takes longer: the id too.
	for _, wait := range []string{"0", "1s"} {
		out, err = runSubmitSplit(ctx, bin, env, jobFile, "--wait", wait, "--option", "max_iterations=2", "--option", "cache=disable")
		id := strings.TrimSpace(out.stdout)
		if err != nil || !messages.ValidJobID(id) || strings.Count(out.stdout, "\n") != 1 {
			t.Errorf("--wait %s: %v, stdout %q, stderr %q; want exit 0 and the job id", wait, err, out.stdout, out.stderr)
			continue
		}
		if wait != "0" && !strings.Contains(out.stderr, "submit watch "+id) {
			t.Errorf("--wait %s: stderr lacks how to follow the job:\n%s", wait, out.stderr)
		}
		if out, err := runSubmitSplit(ctx, bin, env, "watch", id); err != nil || !strings.Contains(out.stdout, "job "+id+":") {
			t.Errorf("watch the --wait %s job: %v\n%s%s", wait, err, out.stdout, out.stderr)
		}
	}
	// With --json, a program reading stdout gets JSON: a running job's result object.
	out, err = runSubmitSplit(ctx, bin, env, jobFile, "--json", "--wait", "0", "--option", "cache=disable")
	var left messages.Result
	if jerr := json.Unmarshal([]byte(out.stdout), &left); err != nil || jerr != nil || !messages.ValidJobID(left.JobID) || left.Status != messages.StatusRunning {
		t.Errorf("--json --wait 0: %v, stdout %q (%v); want a result object of a running job", err, out.stdout, jerr)
	}

	checkTaskReplace(t, ctx, bin, env, jobID)
	checkPoolPause(t, ctx, st, bin, env)

	// NATS out of reach: one line, exit 3, within the connect timeout (and
	// some slack: this is not a timing assertion, only "not a long hang").
	deadEnv := append(cleanEnv(), fmt.Sprintf("AUTOCODER_NATS_URL=nats://127.0.0.1:%d", freePort(t)), "XDG_CONFIG_HOME="+t.TempDir())
	out, err = runSubmitSplit(ctx, bin, deadEnv, "status", jobID)
	if exitCodeOf(err) != 3 || strings.Count(out.stderr, "\n") != 1 || !strings.Contains(out.stderr, "cannot reach NATS at nats://127.0.0.1:") {
		t.Errorf("unreachable NATS: %v, stderr %q; want exit 3 and one line", err, out.stderr)
	}
}

// interruptThenWatch submits jobFile, interrupts the CLI while the job
// runs, and follows the job again with `submit watch` to its end.
func interruptThenWatch(t *testing.T, ctx context.Context, bin string, env []string, jobFile string) string {
	t.Helper()
	follow := exec.CommandContext(ctx, filepath.Join(bin, "submit"), jobFile, "--wait", "5m")
	follow.Env = env
	var followOut bytes.Buffer
	var followErr lockedBuffer
	follow.Stdout, follow.Stderr = &followOut, &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	jobID := waitJobID(t, &followErr)
	follow.Process.Signal(syscall.SIGINT)
	if code := exitCodeOf(follow.Wait()); code != 130 || !strings.Contains(followErr.String(), "submit watch "+jobID) {
		t.Fatalf("Ctrl-C: exit %d, want 130 and how to follow the job again:\n%s", code, followErr.String())
	}
	out, err := runSubmitSplit(ctx, bin, env, "watch", jobID)
	if err != nil || !strings.Contains(out.stdout, "SUCCESS") || !strings.Contains(out.stdout, "job "+jobID+":") ||
		!regexp.MustCompile(`(?m)^  run_tests +iteration `).MatchString(out.stderr) {
		t.Fatalf("submit watch after Ctrl-C: %v\nstdout:\n%s\nstderr:\n%s", err, out.stdout, out.stderr)
	}
	return jobID
}

// checkBashCompletion loads `submit completion bash` into bash and asks
// it to complete `submit ta` and `submit list -o `.
func checkBashCompletion(t *testing.T, ctx context.Context, bin string, env []string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is not installed")
	}
	script := `source <(submit completion bash) || exit 9
complete -p submit
COMP_WORDS=(submit ta); COMP_CWORD=1; _submit_complete; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(submit list -o ''); COMP_CWORD=3; _submit_complete; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(submit pool pause ''); COMP_CWORD=3; _submit_complete; echo "3:${COMPREPLY[*]}"`
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = append(env, "PATH="+bin+":"+os.Getenv("PATH"))
	got, err := cmd.CombinedOutput()
	for _, want := range []string{"complete -o default -F _submit_complete submit", "1:task\n", "2:json yaml\n", "3:llm sandbox\n"} {
		if err != nil || !strings.Contains(string(got), want) {
			t.Errorf("bash completion: %v, output lacks %q:\n%s", err, want, got)
		}
	}
}

// checkTaskReplace registers a task, and again: refused without --replace.
func checkTaskReplace(t *testing.T, ctx context.Context, bin string, env []string, jobID string) {
	t.Helper()
	if out, err := runSubmitSplit(ctx, bin, env, "task", "register", "answer", jobID); err != nil {
		t.Fatalf("task register: %v\n%s", err, out.stderr)
	}
	out, err := runSubmitSplit(ctx, bin, env, "task", "register", "answer", jobID, "--description", "again")
	if exitCodeOf(err) != 2 || !strings.Contains(out.stderr, "--replace") {
		t.Errorf("task register of an existing name: %v %q; want exit 2 naming --replace", err, out.stderr)
	}
	if out, err := runSubmitSplit(ctx, bin, env, "task", "register", "answer", jobID, "--description", "again", "--replace"); err != nil {
		t.Errorf("task register --replace: %v %q", err, out.stderr)
	}
	out, err = runSubmitSplit(ctx, bin, env, "task", "show", "answer", "-o", "yaml")
	if err != nil || !strings.Contains(out.stdout, "description: again\n") {
		t.Errorf("task show -o yaml after --replace: %v\n%s", err, out.stdout)
	}
}

// checkPoolPause pauses and resumes the llm pool and reads its switch
// from the pools bucket, the entry the pool's workers watch. The bucket
// is the coordinator's to provision; where this deployment's coordinator
// does not, the test makes it as that one would.
func checkPoolPause(t *testing.T, ctx context.Context, st *wiring.Stack, bin string, env []string) {
	t.Helper()
	kv, err := st.JS.KeyValue(ctx, messages.BucketPools)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = st.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: messages.BucketPools, History: 1})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		verb   string
		paused bool
	}{{"pause", true}, {"resume", false}} {
		out, err := runSubmitSplit(ctx, bin, env, "pool", step.verb, "llm", "--reason", "provider outage")
		if err != nil || !strings.HasPrefix(out.stdout, "pool llm ") {
			t.Fatalf("pool %s: %v\n%s%s", step.verb, err, out.stdout, out.stderr)
		}
		e, err := kv.Get(ctx, "llm")
		if err != nil {
			t.Fatal(err)
		}
		var p messages.PoolPause
		if err := json.Unmarshal(e.Value(), &p); err != nil || p.Paused != step.paused || p.Reason != "provider outage" || !strings.HasPrefix(p.By, "cli:") {
			t.Errorf("pool %s: the switch is %s (%v)", step.verb, e.Value(), err)
		}
	}
	if out, err := runSubmitSplit(ctx, bin, env, "pool", "pause", "gpu"); exitCodeOf(err) != 2 || !strings.Contains(out.stderr, "pool") {
		t.Errorf("pool pause gpu: %v %q; want exit 2", err, out.stderr)
	}
}

type cliOutput struct{ stdout, stderr string }

// runSubmitSplit runs the submit binary with stdout and stderr apart.
func runSubmitSplit(ctx context.Context, bin string, env []string, args ...string) (cliOutput, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "submit"), args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return cliOutput{stdout.String(), stderr.String()}, err
}
