package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// cancelDeadline is how long a cancelled job may take to end with no
// sandbox left before the test fails: generous, since the test shows that
// it ends, not how fast (bench.BenchmarkCancel's figure, BENCHMARKS.md).
// Only a cancel ends the sandbox that soon: its sleep takes 300 s, and the
// jobs' 120 s timeout would kill it only later.
const cancelDeadline = 60 * time.Second

// sleepingTests are tests that start a 300 s sleep in a child process named
// by marker (its command line), so the test can see it run and see it gone.
func sleepingTests(marker string) string {
	return fmt.Sprintf(`import subprocess
import sys

from solution import answer


def test_answer():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(300)", %q], check=True)
    assert answer() == 42
`, marker)
}

// TestCancelStopsTheSandbox runs a deployment in this
// process (coordinator, workers on bubblewrap, an embedded NATS that lets
// the CLI in) and the real submit binary against it:
//
//  1. `submit JOBFILE --json --wait 5m` (flags after the job file) follows a
//     job whose tests sleep 300 s; Ctrl-C while the sandbox sleeps ends the
//     command with exit 130 and how to follow or cancel the job, which goes on.
//  2. `submit cancel JOB_ID --reason ...` ends the job: the command prints
//     who cancelled it, the result says so, and no process of the sandbox
//     is left, well before the sleep would have ended.
//
// Not parallel: it checks that this test process has no child left, which
// another test's sandboxes would spoil.
func TestCancelStopsTheSandbox(t *testing.T) {
	requireSandboxTools(t)
	bin := buildSubmit(t)
	marker := "autocoder-cancel-test-" + randomHex(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptWithTests(fake, sleepingTests(marker), sol(code("6 * 7")))
	cfg := testConfig(t, fake)
	cfg.NATSAuth = config.NATSAuthNone
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}, EmbeddedListen: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	defer st.Close()
	env := append(cleanEnv(), fmt.Sprintf("AUTOCODER_NATS_URL=nats://127.0.0.1:%d", port), "AUTOCODER_STATE_DIR="+t.TempDir())

	jobFile := filepath.Join(t.TempDir(), "job.yaml")
	os.WriteFile(jobFile, []byte("prompt: Compute the answer (42) and write it as the output answer.\noutputs: {answer: int}\noptions: {timeout: 120}\n"), 0o644)
	follow := exec.CommandContext(ctx, filepath.Join(bin, "submit"), jobFile, "--json", "--wait", "5m")
	follow.Env = env
	var followOut bytes.Buffer
	var followErr lockedBuffer
	follow.Stdout, follow.Stderr = &followOut, &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	jobID := waitJobID(t, &followErr)
	waitFor(t, 90*time.Second, "the sandbox's sleep to start", func() bool { return len(processesWith(marker)) > 0 })

	follow.Process.Signal(syscall.SIGINT)
	err = follow.Wait()
	stderr := followErr.String()
	if code := exitCodeOf(err); code != 130 {
		t.Errorf("Ctrl-C: exit %d, want 130\n%s", code, stderr)
	}
	for _, want := range []string{"job " + jobID + " goes on", "submit events " + jobID, "submit cancel " + jobID} {
		if !strings.Contains(stderr, want) {
			t.Errorf("Ctrl-C: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "context canceled") || followOut.Len() != 0 {
		t.Errorf("Ctrl-C: stderr %q, stdout %q", stderr, followOut.String())
	}
	if len(processesWith(marker)) == 0 {
		t.Fatal("the job's sandbox stopped when the CLI that followed it did")
	}
	// The worker announces a stage once it has run a quarter second
	// (stagework's AnnounceAfter): until then the status says queued.
	running := regexp.MustCompile(`(?m)^running now:\n  run_tests +iteration 1 +queued [0-9]+s, running for [0-9]+s on \S+$`)
	var status string
	var statusErr error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		status, statusErr = runSubmit(ctx, bin, env, "status", jobID)
		if (statusErr == nil && strings.Contains(status, "job "+jobID+": running since") && running.MatchString(status)) || time.Now().After(deadline) {
			break
		}
	}
	if statusErr != nil || !running.MatchString(status) || !strings.Contains(status, "job "+jobID+": running since") {
		t.Errorf("status of the running job: %v\n%s", statusErr, status)
	}

	start := time.Now()
	out, err := runSubmit(ctx, bin, env, "cancel", jobID, "--reason", "wrong data")
	waitFor(t, cancelDeadline, "the sandbox to be gone", func() bool { return len(processesWith(marker)) == 0 && len(children(t)) == 0 })
	if err != nil || !strings.Contains(out, "job "+jobID+" cancelled by cli:") {
		t.Fatalf("submit cancel: %v\n%s", err, out)
	}
	res, err := st.Client.Result(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cancelled; c == nil || !strings.HasPrefix(c.By, "cli:") || c.Reason != "wrong data" || c.At.Before(start.Add(-time.Second)) ||
		res.Status != messages.StatusCancelled || res.Success {
		t.Errorf("result: status %s, cancelled %+v, error %q", res.Status, res.Cancelled, res.Error)
	}
	// Cancelling again, or a job nobody knows: exit 1 and 2, one line each.
	if _, err := runSubmit(ctx, bin, env, "cancel", jobID); exitCodeOf(err) != 1 {
		t.Errorf("cancel a finished job: %v, want exit 1", err)
	}
	if out, err := runSubmit(ctx, bin, env, "cancel", "job-nobody"); exitCodeOf(err) != 2 || !strings.Contains(out, "not found") {
		t.Errorf("cancel an unknown job: %v, %q; want exit 2", err, out)
	}
	if out, err := runSubmit(ctx, bin, env, "status", jobID); err == nil || exitCodeOf(err) != 1 || !strings.Contains(out, "CANCELLED by cli:") {
		t.Errorf("status of the cancelled job: %v\n%s", err, out)
	}
}

// buildSubmit builds the submit binary into a temporary folder.
func buildSubmit(t *testing.T) string {
	t.Helper()
	bin := buildCommands(t, "./cmd/submit")
	return bin
}

func runSubmit(ctx context.Context, bin string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "submit"), args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func randomHex(t *testing.T) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

var submittedRe = regexp.MustCompile(`job (\S+) submitted`)

// waitJobID waits for the CLI to say which job it submitted.
func waitJobID(t *testing.T, stderr *lockedBuffer) string {
	t.Helper()
	var id string
	waitFor(t, 60*time.Second, "the job id on stderr", func() bool {
		m := submittedRe.FindStringSubmatch(stderr.String())
		if m != nil {
			id = m[1]
		}
		return m != nil
	})
	return id
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exitCodeOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// processesWith lists the pids of live processes whose command line holds s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) && !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// children lists the live descendants of this process: the sandboxes
// (bubblewrap and what runs in it) while a stage runs.
func children(t *testing.T) []string {
	t.Helper()
	parent := map[int]int{}
	comm := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || zombie(pid) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[i+1:])
		if i < 0 || len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		parent[pid], comm[pid] = ppid, s[strings.IndexByte(s, '(')+1:i]
	}
	self := os.Getpid()
	var out []string
	for pid := range parent {
		depth := 1
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				if !idleWarmRunner(pid, depth) {
					out = append(out, fmt.Sprintf("%d %s", pid, comm[pid]))
				}
				break
			}
			depth++
		}
	}
	return out
}

// idleWarmRunner says whether a descendant of the test is part of a
// process sandbox's warm runner itself (docs/sandbox.md): its bubblewrap,
// bubblewrap's init and the zygote, which outlive every job, and the
// zygote's spare child, which waits as root for a run it has not been
// given. The zygote's other children (the runs, one level further down,
// under the run's uid) are the jobs' sandboxes.
func idleWarmRunner(pid, depth int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte("<warm-runner>")) {
		return false
	}
	return depth <= 3 || (depth == 4 && uidOf(pid) == "0")
}

// uidOf is a process's real uid, "" when it is gone.
func uidOf(pid int) string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || s[i+2] == 'Z'
}

// TestCancelAbandonsTheModelCall: a job cancelled while its plan waits on
// the model (a reply an hour away) frees the worker at once: with one LLM
// slot, the next job's model calls are made and it passes well before the
// first call could have ended. The worker's call was abandoned, not
// waited out.
func TestCancelAbandonsTheModelCall(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.JSON(messages.Plan{Description: "never", Approach: "a"}).Delay(time.Hour))
	scriptBasics(fake, sol(code("6 * 7")))
	cfg := testConfig(t, fake)
	cfg.Concurrency = 1 // one slot: a call still running would hold it
	st := startLocal(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first := client.NewJobID()
	if err := st.Client.Submit(ctx, first, planFirst(answerSpec())); err != nil { // its plan call waits an hour
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the first plan call", func() bool { return len(fake.Requests()) == 1 })
	if _, err := st.Client.Cancel(ctx, first, "test", "stuck"); err != nil {
		t.Fatal(err)
	}
	if res, err := st.Client.WaitResult(ctx, first); err != nil || res.Cancelled == nil {
		t.Fatalf("first job: %v, %+v", err, res)
	}
	res := runJob(t, st, answerSpec())
	if !res.Success || res.Outputs["answer"] != float64(42) {
		t.Fatalf("second job: %s %v", res.Error, res.Outputs)
	}
}
