package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestFullStoresRefuseUploadsAndEndJobs: with the samples and outputs
// stores at their bounds, a sample upload is refused with an error that
// names the store and its setting, and a job whose File output cannot be
// stored ends failed with that reason, while the jobs' own streams still
// take its state and result. Before, nothing bounded these stores: uploads
// filled the server's store and a stage result was then dropped, its job
// left running.
func TestFullStoresRefuseUploadsAndEndJobs(t *testing.T) {
	t.Parallel()
	requireSandboxTools(t)
	fake := fakellm.New()
	defer fake.Close()
	c := writesCode(write("answer", "str(answer())") + `    with open("/var/outputs/report", "w") as f:
        f.write("r" * 200000)
`)
	scriptBasics(fake, sol(c))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: testConfig(t, fake), Roles: []wiring.Role{wiring.RoleLocal},
		Provision: bus.ProvisionConfig{SamplesMaxBytes: 1 << 20, OutputsMaxBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fill := make([]byte, 1000<<10)
	_, _ = rand.Read(fill)
	for _, o := range []jetstream.ObjectStore{st.Resources.Samples, st.Resources.Outputs} {
		if _, err := o.Put(ctx, jetstream.ObjectMeta{Name: "filler"}, bytes.NewReader(fill)); err != nil {
			t.Fatal(err)
		}
	}

	_, err = st.Client.PutSample(ctx, "rows.csv", bytes.NewReader(bytes.Repeat([]byte("1,2,3\n"), 20_000)))
	if !errors.Is(err, bus.ErrStoreFull) || !strings.Contains(err.Error(), "AUTOCODER_SAMPLES_MAX_BYTES") {
		t.Errorf("upload to the full samples store: %v, want ErrStoreFull naming the setting", err)
	}

	spec := answerSpec()
	spec.Outputs = map[string]messages.Type{"answer": messages.TypeInt, "report": messages.TypeFile}
	spec.Options.MaxIterations = 2
	res := runJob(t, st, spec)
	if res.Status != messages.StatusFailed || !strings.Contains(res.Error, "autocoder_outputs object store is full") {
		t.Fatalf("a job whose output cannot be stored: status %s, error %q; want failed with the store's reason", res.Status, res.Error)
	}
}
