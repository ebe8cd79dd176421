package e2e

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Output caps (issue 14): a declared output past the collection caps fails
// the acceptance naming the output and the cap; undeclared files in
// /var/outputs are never read, so they cannot hide declared ones.

// dirJob runs one job whose script writes body (Python statements in
// main) and declares the outputs answer (int) and d (dir); the same code
// comes back from every fix.
func dirJob(t *testing.T, body string) *messages.Result {
	t.Helper()
	fake := fakellm.New()
	defer fake.Close()
	c := writesCode(write("answer", "str(answer())") + body)
	scriptBasics(fake, sol(c), sol("# the same, says the model\n"+c))
	st := startLocal(t, testConfig(t, fake))
	spec := answerSpec()
	spec.Outputs = map[string]messages.Type{"answer": messages.TypeInt, "d": messages.TypeDir}
	spec.Options.MaxIterations = 2
	return runJob(t, st, spec)
}

// TestDirOutputPastTheFileCapFails: a Dir of 20,000 files is past the
// default cap of 10,000 entries: the job fails naming the output and the
// cap (before, it came back with 9,999 files and succeeded).
func TestDirOutputPastTheFileCapFails(t *testing.T) {
	t.Parallel()
	res := dirJob(t, `    os.makedirs("/var/outputs/d", exist_ok=True)
    for i in range(20000):
        with open("/var/outputs/d/f%05d.txt" % i, "w") as f:
            f.write("x")
`)
	if res.Success {
		t.Fatalf("a 20,000-file Dir succeeded: %v", res.Outputs)
	}
	for _, want := range []string{"output d (Dir)", "entries left out", "10000 files", "AUTOCODER_MAX_OUTPUT_FILES"} {
		if !strings.Contains(res.Error, want) {
			t.Errorf("error %q does not say %q", res.Error, want)
		}
	}
}

// TestHugeFileInDirIsReported: a 900 MB (sparse) file in a Dir is past the
// 64 MiB byte cap: the job fails naming the file and the cap, instead of
// the Dir coming back without it.
func TestHugeFileInDirIsReported(t *testing.T) {
	t.Parallel()
	res := dirJob(t, `    os.makedirs("/var/outputs/d", exist_ok=True)
    with open("/var/outputs/d/small.txt", "w") as f:
        f.write("small")
    with open("/var/outputs/d/huge.bin", "wb") as f:
        f.truncate(900 * 2**20)
`)
	if res.Success {
		t.Fatalf("a Dir with a 900 MB file succeeded: %v", res.Outputs)
	}
	for _, want := range []string{"output d (Dir)", "d/huge.bin", "64 MiB"} {
		if !strings.Contains(res.Error, want) {
			t.Errorf("error %q does not say %q", res.Error, want)
		}
	}
}

// TestUndeclaredOutputsNeverHideDeclaredOnes: 12,000 undeclared files and
// an undeclared 100 MB scratch file, both sorting before the declared
// outputs, take nothing from their caps: the job succeeds with every
// declared output.
func TestUndeclaredOutputsNeverHideDeclaredOnes(t *testing.T) {
	t.Parallel()
	res := dirJob(t, `    os.makedirs("/var/outputs/aaa_cache", exist_ok=True)
    for i in range(12000):
        with open("/var/outputs/aaa_cache/c%05d" % i, "w") as f:
            f.write("c")
    with open("/var/outputs/aab_scratch.bin", "wb") as f:
        f.write(b"s" * (100 * 2**20))
    os.makedirs("/var/outputs/d", exist_ok=True)
    for name in ("one", "two", "three"):
        with open("/var/outputs/d/" + name, "w") as f:
            f.write(name)
`)
	if !res.Success {
		t.Fatalf("job failed: %s", res.Error)
	}
	if got := res.Outputs["answer"]; got != float64(42) {
		t.Errorf("outputs[answer] = %#v, want 42", got)
	}
	d, _ := res.Outputs["d"].(map[string]any)
	if d["files"] != float64(3) {
		t.Errorf("outputs[d] = %#v, want 3 files", res.Outputs["d"])
	}
}
