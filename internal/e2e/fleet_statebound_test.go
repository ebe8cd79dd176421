package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/httpapi"
	"github.com/autocoder/autocoder/internal/submit"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Every job ends and every submission exists or is refused (issue 21).

// TestSixHundredKilobyteSolutionEndsTheJob: a 600 KB solution fits the job
// state, but not with the commands that carry it on: the job ends failed,
// naming the bound. Before, the step and the stage's failure were both
// refused and the job stayed "running" forever.
func TestSixHundredKilobyteSolutionEndsTheJob(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	padding := "# " + strings.Repeat("padding ", 75_000) + "\n"
	scriptBasics(fake, sol(padding+code("6 * 7")))
	st := startLocal(t, testConfig(t, fake))
	res := runJob(t, st, answerSpec())
	if res.Status != messages.StatusFailed || !strings.Contains(res.Error, "job state over its bound") {
		t.Fatalf("status %s, error %q: want failed at the job-state bound", res.Status, res.Error)
	}
	again, err := st.Client.Status(context.Background(), res.JobID)
	if err != nil || again.Status != messages.StatusFailed {
		t.Errorf("status of the ended job: %+v, %v", again, err)
	}
}

// TestOversizedSubmissionsAreRefusedSynchronously: a job file with a 900 KB
// prompt makes the CLI exit 2 naming the bound, before anything is queued;
// 10,000 sample references are refused with the reason over the message
// API and over HTTP (400). Before, the CLI printed "submitted" and the
// API answered with a job ID, and neither job ever existed.
func TestOversizedSubmissionsAreRefusedSynchronously(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	cfg := testConfig(t, fake)
	st := startLocal(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	prompt := strings.Repeat("Compute the answer and write it as the output answer. ", 17_000) // 935 KB
	if err := os.WriteFile(job, []byte("prompt: "+prompt+"\noutputs: {answer: int}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := submit.Run(ctx, []string{"--local", job}, testConfig(t, fake), submit.IO{Stdout: &stdout, Stderr: &stderr}); code != submit.ExitUsage ||
		!strings.Contains(stderr.String(), "over the 1008 KiB bound of one stored job") || strings.Contains(stderr.String(), "submitted") {
		t.Errorf("submit a 935 KB prompt: exit %d, stderr %q; want 2 naming the bound, nothing submitted", code, stderr.String())
	}

	ref, err := st.Client.PutSample(ctx, "rows.csv", strings.NewReader("a,b\n1,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec := answerSpec()
	spec.Samples = map[string]string{}
	for i := range 10_000 {
		spec.Samples[fmt.Sprintf("s%05d", i)] = ref.Object
	}
	reply, err := st.Client.SubmitRequest(ctx, messages.APIRequest{Spec: &spec})
	if err != nil || reply.Kind != messages.ReplyInvalid || !strings.Contains(reply.Error, "bound of one stored job") {
		t.Errorf("NATS API, 10,000 samples: reply %+v, err %v; want refused naming the bound", reply, err)
	}
	if reply.JobID != "" {
		if _, err := st.Client.Status(ctx, reply.JobID); err == nil {
			t.Errorf("the refused job %s exists", reply.JobID)
		}
	}

	srv := httptest.NewServer(httpapi.Handler(st.Client, nil, httpapi.Options{Open: true}))
	defer srv.Close()
	body, _ := json.Marshal(messages.APIRequest{Spec: &spec})
	resp, err := http.Post(srv.URL+"/v1/jobs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got messages.APIReply
	_ = json.NewDecoder(resp.Body).Decode(&got)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got.Error, "bound of one stored job") {
		t.Errorf("HTTP, 10,000 samples: %d %+v; want 400 naming the bound", resp.StatusCode, got)
	}

	// A producer that publishes on the jobs stream itself skips these
	// checks: its job still exists, failed with the reason.
	id := client.NewJobID()
	sub := messages.SubmitJob{V: messages.WireVersion, JobID: id, Spec: spec}
	if err := st.Publisher.PublishJSON(ctx, "autocoder.jobs.submit", sub, "submit."+id); err != nil {
		t.Fatal(err)
	}
	res, err := st.Client.WaitResult(ctx, id)
	if err != nil || res.Status != messages.StatusFailed || !strings.Contains(res.Error, "bound of one stored job") {
		t.Errorf("published directly: %+v, %v; want a failed job naming the bound", res, err)
	}
}
