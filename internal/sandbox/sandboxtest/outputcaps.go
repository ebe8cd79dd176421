package sandboxtest

import (
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// testUndeclaredOutputsNeverHide: undeclared files in /var/outputs (many
// entries and a large scratch file, sorting first) are never read, so the
// declared outputs come back whole; a declared Dir past the entry cap
// fails naming it and the cap.
func testUndeclaredOutputsNeverHide(t *testing.T, f *fixture) {
	out, err := sandbox.RunScript(t.Context(), f.b, sandbox.ScriptRun{
		Env: f.env, Timeout: 120 * time.Second,
		Code: `
import os
os.makedirs("/var/outputs/aaa_cache")
for i in range(300):
    open("/var/outputs/aaa_cache/c%03d" % i, "w").write("c")
with open("/var/outputs/aab_scratch.bin", "wb") as f:
    f.truncate(80 * 2**20)
open("/var/outputs/answer", "w").write("42")
os.makedirs("/var/outputs/d")
for name in ("one", "two"):
    open("/var/outputs/d/" + name, "w").write(name)
os.makedirs("/var/outputs/wide")
for i in range(150):
    open("/var/outputs/wide/w%03d" % i, "w").write("w")
`,
		Outputs:    map[string]messages.Type{"answer": messages.TypeInt, "d": messages.TypeDir, "wide": messages.TypeDir},
		OutputCaps: sandbox.OutputCaps{MaxFiles: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Outputs["answer"]; got != int64(42) {
		t.Errorf("answer = %#v, want 42 (hidden by undeclared files?)", got)
	}
	if got, ok := out.Outputs["d"].(sandbox.DirValue); !ok || got.Files != 2 {
		t.Errorf("d = %#v, want a Dir of 2 files", out.Outputs["d"])
	}
	if out.OK || len(out.Problems) != 1 || !strings.Contains(out.Problems[0], "output wide (Dir)") ||
		!strings.Contains(out.Problems[0], "100 files") {
		t.Errorf("problems %q: want one naming output wide and the cap of 100 files", out.Problems)
	}
}
