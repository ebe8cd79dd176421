package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestAgentDockerBackend: the agent's commands and tests run in containers
// of the Docker backend (the engine at DOCKER_HOST) as they do in
// bubblewrap: bash sees the workspace and the samples, run_tests is the
// job's test stage, and the acceptance run's typed outputs come back.
func TestAgentDockerBackend(t *testing.T) {
	t.Parallel()
	pctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	err := docker.Ping(pctx, "")
	cancel()
	if err != nil {
		t.Fatalf("%v\nrun scripts/setup-docker.sh and export the DOCKER_HOST it prints (scripts/test.sh does both)", err)
	}
	fake := fakellm.New()
	defer fake.Close()
	fake.On(fakellm.NoSchema,
		fakellm.ToolCalls(writeCall("solution.py", salesCode), writeCall("test_solution.py", salesTests),
			bashCall("wc -l /var/inputs/sales.csv && mkdir -p notes && echo checked > notes/done.txt && ls notes")),
		fakellm.ToolCalls(call(messages.ToolReadFile, map[string]string{"path": "notes/done.txt"}), call(messages.ToolRunTests, map[string]any{})),
		fakellm.Text("The tests pass."))
	cfg := testConfig(t, fake)
	cfg.Sandbox = "docker"
	cfg.DockerBaseImage = dockerBaseImage()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := wiring.Start(ctx, wiring.Options{Config: cfg, Roles: []wiring.Role{wiring.RoleLocal}})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	sample := filepath.Join(t.TempDir(), "sales.csv")
	if err := os.WriteFile(sample, []byte("region,amount\nnorth,10.5\nsouth,4.25\nnorth,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := messages.JobSpec{
		Prompt:  "Summarize the sales: row count, total amount, the region with the most, whether every amount is positive.",
		Samples: map[string]string{"sales": sample},
		Outputs: map[string]messages.Type{"row_count": messages.TypeInt, "total": messages.TypeFloat,
			"top_region": messages.TypeStr, "all_positive": messages.TypeBool},
		Options: messages.Options{Backend: messages.BackendAgent},
	}
	res, _ := runAgentJob(t, st, spec)
	if !res.Success {
		t.Fatalf("job failed: %s\ntrace %+v", res.Error, res.Agent)
	}
	if res.Outputs["total"] != 16.75 || res.Outputs["top_region"] != "north" {
		t.Errorf("outputs %v", res.Outputs)
	}
	results := allToolResults(fake)
	for _, w := range []string{"4 /var/inputs/sales.csv", "done.txt", "checked", "pytest ran in the sandbox: 1 passed"} {
		if !strings.Contains(results, w) {
			t.Errorf("no tool result says %q; results:\n%s", w, results)
		}
	}
	if !strings.HasPrefix(res.Image, "autocoder-env:") {
		t.Errorf("image %q, want a docker environment", res.Image)
	}
}
