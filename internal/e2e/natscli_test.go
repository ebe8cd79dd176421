package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// natsCLI is the nats CLI scripts/setup.sh installs (pinned); without CI a
// machine that lacks it skips the test, with CI it fails.
func natsCLI(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	gobin := os.Getenv("GOBIN")
	if gobin == "" {
		gobin = filepath.Join(build.Default.GOPATH, "bin")
	}
	p := filepath.Join(gobin, "nats")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the nats CLI is missing (%v): run scripts/setup.sh", err)
		}
		t.Skipf("the nats CLI is missing (%v): run scripts/setup.sh", err)
	}
	return p
}

// TestSubmitWithNATSCLI runs docs/api.md's examples with the nats CLI as
// the producer user: a request on autocoder.api.submit gets the job ID at
// once, the result is read from the results bucket, and a bad spec gets
// the error naming the field in the reply.
func TestSubmitWithNATSCLI(t *testing.T) {
	t.Parallel()
	bin := natsCLI(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptBasics(fake, sol(code("6 * 7")))
	sys := startAPISystem(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nats := func(args ...string) string {
		t.Helper()
		base := []string{"--server", "nats://" + sys.natsAddr, "--user", "producer", "--password", apiProducerPassword,
			"--inbox-prefix", "_INBOX_producer"}
		cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no contexts of the machine's user
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("nats %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	spec, err := json.Marshal(answerSpec())
	if err != nil {
		t.Fatal(err)
	}
	var reply messages.APIReply
	out := nats("req", "--raw", "autocoder.api.submit", fmt.Sprintf(`{"v":1,"spec":%s}`, spec))
	if err := json.Unmarshal([]byte(out), &reply); err != nil || reply.JobID == "" || reply.Error != "" {
		t.Fatalf("reply %q: %v", out, err)
	}
	var res messages.Result
	for ctx.Err() == nil {
		cmd := exec.CommandContext(ctx, bin, "--server", "nats://"+sys.natsAddr, "--user", "producer", "--password", apiProducerPassword,
			"--inbox-prefix", "_INBOX_producer", "kv", "get", "autocoder_job_results", reply.JobID, "--raw")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		if b, err := cmd.Output(); err == nil && json.Unmarshal(b, &res) == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !res.Success || fmt.Sprint(res.Outputs["answer"]) != "42" {
		t.Errorf("result of %s: %s %q", reply.JobID, res.Status, res.Error)
	}

	out = nats("req", "--raw", "autocoder.api.submit", `{"v":1,"spec":{"prompt":"x","outputs":{"answer":"complex"}}}`)
	reply = messages.APIReply{}
	if err := json.Unmarshal([]byte(out), &reply); err != nil || reply.Field != "spec.outputs.answer" || !strings.Contains(reply.Error, "complex") {
		t.Errorf("bad spec: reply %q (%v), want the field spec.outputs.answer", out, err)
	}
}
