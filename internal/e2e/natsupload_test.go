package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

const salesCSV = "region,amount\nnorth,10.5\nsouth,4.25\nnorth,2\n"

// TestNATSUploadAndProducerExamples runs docs/api.md's producer examples
// against an authenticated NATS, as the producer user, with no Go client:
//
//   - examples/api/upload_nats.py writes a sample over the raw NATS
//     protocol as the object store does (chunks on $O.<bucket>.C.<nuid>,
//     then the meta message on $O.<bucket>.M.<name>), and the Go object
//     store reads it back, digest checked;
//   - `nats object put` does the same with the nats CLI;
//   - a job referring to the uploaded sample is submitted with `nats req`,
//     its events read with `nats stream view` and its result with
//     `nats kv get`, each with the producer's inbox prefix ($P).
func TestNATSUploadAndProducerExamples(t *testing.T) {
	t.Parallel()
	bin := natsCLI(t)
	fake := fakellm.New()
	defer fake.Close()
	scriptWithTests(fake, salesTests, sol(salesCode))
	sys := startAPISystem(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	home := t.TempDir() // no contexts of the machine's user
	nats := func(args ...string) (string, error) {
		base := []string{"--server", "nats://" + sys.natsAddr, "--user", "producer", "--password", apiProducerPassword,
			"--inbox-prefix", "_INBOX_producer"}
		cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// A sample of a few chunks' worth, over the raw protocol.
	dir := t.TempDir()
	big := filepath.Join(dir, "big.csv")
	var b strings.Builder
	b.WriteString("region,amount\n")
	for i := 0; b.Len() < 300<<10; i++ {
		fmt.Fprintf(&b, "r%d,%d\n", i, i)
	}
	os.WriteFile(big, []byte(b.String()), 0o644)
	sum := sha256.Sum256([]byte(b.String()))
	code, out, errOut := runPython(t, "examples/api/upload_nats.py", sys.natsAddr, "producer", apiProducerPassword, big)
	if want := "sha256:" + hex.EncodeToString(sum[:]) + ".csv"; code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("upload_nats.py: exit %d, %q (want %q)\n%s", code, out, want, errOut)
	}
	got, err := sys.st.Resources.Samples.GetBytes(ctx, "sha256-"+hex.EncodeToString(sum[:]))
	if err != nil || string(got) != b.String() {
		t.Fatalf("the raw upload read by the Go object store: %v (%d bytes of %d)", err, len(got), b.Len())
	}

	// The small sample the job reads: raw protocol, and the nats CLI as the docs show.
	sales := filepath.Join(dir, "sales.csv")
	os.WriteFile(sales, []byte(salesCSV), 0o644)
	code, out, errOut = runPython(t, "examples/api/upload_nats.py", sys.natsAddr, "producer", apiProducerPassword, sales)
	ref := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(ref, "sha256:") {
		t.Fatalf("upload_nats.py sales.csv: exit %d %q\n%s", code, out, errOut)
	}
	h := strings.TrimSuffix(strings.TrimPrefix(ref, "sha256:"), ".csv")
	if out, err := nats("object", "put", "autocoder_samples", sales, "--name", "sha256-"+h, "--force"); err != nil {
		t.Fatalf("nats object put: %v\n%s", err, out)
	}

	spec := fmt.Sprintf(`{"v":1,"spec":{"prompt":"Summarize the sales: row count, total amount, the region with the most, whether every amount is positive.",`+
		`"samples":{"sales":%q},"outputs":{"row_count":"int","total":"float","top_region":"str","all_positive":"bool"},"options":{"max_iterations":2}}}`, ref)
	out, err = nats("req", "--raw", "autocoder.api.submit", spec)
	var reply messages.APIReply
	if err != nil || json.Unmarshal([]byte(out), &reply) != nil || reply.JobID == "" {
		t.Fatalf("nats req autocoder.api.submit: %v\n%s", err, out)
	}
	var res messages.Result
	waitFor(t, 3*time.Minute, "the result in the results bucket (nats kv get)", func() bool {
		out, err := nats("kv", "get", "autocoder_job_results", reply.JobID, "--raw")
		if err != nil || json.Unmarshal([]byte(out), &res) != nil {
			time.Sleep(300 * time.Millisecond)
			return false
		}
		return true
	})
	if !res.Success || res.Outputs["top_region"] != "north" || res.Outputs["total"] != 16.75 {
		t.Errorf("job on the uploaded sample: %s %q %v", res.Status, res.Error, res.Outputs)
	}
	// Events in a script: the first few with a consumer of the stream
	// (`stream view` pages interactively: it needs a terminal), the last
	// one (job_finished) with a direct get.
	out, err = nats("sub", "--stream", "AUTOCODER_EVENTS", "autocoder.events."+reply.JobID, "--all", "--raw", "--count", "2")
	if err != nil || !strings.Contains(out, `"type":"job_started"`) || strings.Count(out, `"job_id":"`+reply.JobID+`"`) < 2 {
		t.Errorf("nats sub --stream AUTOCODER_EVENTS: %v\n%s", err, out)
	}
	out, err = nats("stream", "get", "AUTOCODER_EVENTS", "--last-for", "autocoder.events."+reply.JobID)
	if err != nil || !strings.Contains(out, `"job_finished"`) {
		t.Errorf("nats stream get --last-for: %v\n%s", err, out)
	}
}
