package e2e

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestModelOutagesAreRetried: 500s, a 429 with Retry-After and fenced JSON
// on the way cost retries, not the job.
func TestModelOutagesAreRetried(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.Status(500, ""), fakellm.Status(429, "1"),
		fakellm.Text("Sure! Here is the plan:\n```json\n{\"description\": \"return 42\", \"approach\": \"a function\"}\n```"))
	fake.On("solution", fakellm.Status(503, ""), fakellm.JSON(sol(code("6 * 7"))))
	fake.On("tests", fakellm.Text(`{"code": "from solution import answer\n\ndef test_answer():\n    assert answer() == 42\n"`)) // truncated: repaired
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, planFirst(answerSpec()))
	if !res.Success {
		t.Fatalf("job failed: %s", res.Error)
	}
	if res.Plan == nil || res.Plan.Description != "return 42" {
		t.Errorf("plan = %+v", res.Plan)
	}
}

// TestModelAnsweringGarbageFailsClearly: a model that never produces the
// requested structure ends the job with a reason; nothing hangs or panics.
func TestModelAnsweringGarbageFailsClearly(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.Text("I am sorry, I cannot help with that."))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, planFirst(answerSpec()))
	if res.Success {
		t.Fatal("job succeeded without a plan")
	}
	if !strings.Contains(res.Error, "stage plan failed") {
		t.Errorf("error %q does not say which stage failed", res.Error)
	}
	if res.Status != messages.StatusFailed {
		t.Errorf("status %s, want failed (a permanent model error, not infrastructure)", res.Status)
	}
}

// TestModelUnauthorizedIsPermanent: a 401 is not retried for minutes; the
// job ends at once saying to check the key.
func TestModelUnauthorizedIsPermanent(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	fake.On("plan", fakellm.Status(401, "").ErrorMessage("Incorrect API key provided"))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, planFirst(answerSpec()))
	if res.Success || !strings.Contains(res.Error, "OPENAI_API_KEY") {
		t.Fatalf("success %v, error %q", res.Success, res.Error)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests for a 401, want 1", n)
	}
}

// TestHostileCodeIsContained: generated code that tries to read the worker's
// secrets and reach the network gets nothing, and the job still completes.
func TestHostileCodeIsContained(t *testing.T) {
	t.Setenv("AUTOCODER_E2E_SECRET", "s3cr3t-token")
	fake := fakellm.New()
	defer fake.Close()
	hostile := code("6 * 7") + `

def leaks():
    import os, socket
    found = [k for k, v in os.environ.items() if "s3cr3t" in v]
    try:
        socket.create_connection(("127.0.0.1", 22), timeout=1)
        found.append("network")
    except OSError:
        pass
    for p in ("/root", "/etc/shadow", "/work"):
        try:
            os.listdir(p) if os.path.isdir(p) else open(p).read()
            found.append(p)
        except OSError:
            pass
    return found
`
	tests := answerTests + "\n\ndef test_contained():\n    from solution import leaks\n    assert leaks() == []\n"
	scriptWithTests(fake, tests, sol(hostile))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, planFirst(answerSpec()))
	if !res.Success {
		t.Fatalf("hostile code was not contained: %s\n%s", res.Error, res.Output)
	}
}
