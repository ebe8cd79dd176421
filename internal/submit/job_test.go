package submit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecKeepsContextReferences: a job file that reuses a result's spec
// names its context by object reference; the CLI reads only the local
// entries and keeps the reference (it was refused: "stat sha256:…").
func TestSpecKeepsContextReferences(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ref := "sha256:" + strings.Repeat("ab", 32) + ".json"
	mustWriteFile(t, filepath.Join(dir, "docs", "guide.md"), "# Guide\n\ntext")
	job := filepath.Join(dir, "job.yaml")
	mustWriteFile(t, job, "prompt: p\ncontext: ["+ref+", docs]\n")
	f := jobFlags{}
	spec, _, err := f.spec([]string{job}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Context) != 2 || spec.Context[0] != ref {
		t.Errorf("context = %v, want the reference kept first", spec.Context)
	}
}

// TestSpecCountsContextFlags: --context flags count towards the bound of
// context entries like the job file's own.
func TestSpecCountsContextFlags(t *testing.T) {
	t.Parallel()
	f := jobFlags{prompt: "p"}
	for i := range 65 {
		f.context = append(f.context, fmt.Sprintf("sha256:%064x.json", i))
	}
	_, _, err := f.spec(nil, nil)
	if err == nil || !strings.Contains(err.Error(), "has 65 entries, at most 64") {
		t.Errorf("65 --context flags: %v, want the bound", err)
	}
	f.context = f.context[:64]
	if _, _, err := f.spec(nil, nil); err != nil {
		t.Errorf("64 --context flags: %v", err)
	}
}

func mustWriteFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
