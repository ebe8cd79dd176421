package sandboxtest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestDiskQuota is the per-run disk quota the conformance backends are
// built with (bwrap.Config.DiskQuota, docker.Config.DiskQuota): small, so
// that reaching it is quick and far below any memory limit.
const TestDiskQuota = 64 << 20

// testDiskQuota writes up to 1 GiB, 8 MiB a file, to /workspace and then
// to /var/outputs (the review saw one run write 4 GiB to the worker's
// disk, where only a per-file cap applied): each stops at the quota with
// "no space left", and the worker serves the next run.
func testDiskQuota(t *testing.T, f *fixture) {
	for _, dir := range []string{"/workspace", "/var/outputs"} {
		res := f.python(t, fmt.Sprintf(`
import errno, os
total, err = 0, "none"
chunk = b"\0" * (1 << 20)
try:
    for i in range(128):
        with open(os.path.join(%q, "fill%%d" %% i), "wb") as f:
            for _ in range(8):
                f.write(chunk)
                f.flush()
                total += len(chunk)
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print("total", total, "err", err)
`, dir), nil)
		out := strings.TrimSpace(string(res.Stdout))
		t.Logf("%s: %s", dir, out)
		if res.ExitCode != 0 {
			t.Fatalf("%s: run failed: %s", dir, dump(res))
		}
		fields := strings.Fields(out)
		if len(fields) != 4 || (fields[3] != "ENOSPC" && fields[3] != "EDQUOT") {
			t.Errorf("%s took 1 GiB without running out of space: %s", dir, out)
			continue
		}
		if total, _ := strconv.Atoi(fields[1]); total > TestDiskQuota {
			t.Errorf("%s took %d bytes, over the quota of %d", dir, total, TestDiskQuota)
		}
	}
	// A script that fills its outputs hears why it failed.
	out, err := sandbox.RunScript(t.Context(), f.b, sandbox.ScriptRun{
		Env: f.env, Timeout: 60 * time.Second,
		Code: `
with open("/var/outputs/big", "wb") as f:
    for _ in range(1024):
        f.write(b"\0" * (1 << 20))
`,
		Outputs: map[string]messages.Type{"big": messages.TypeFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.OK || !slicesContains(out.Problems, sandbox.DiskFullProblem) {
		t.Errorf("a script that filled /var/outputs: problems %q, want %q", out.Problems, sandbox.DiskFullProblem)
	}
	assertServes(t, f)
}
