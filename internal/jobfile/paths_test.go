package jobfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadKeepsPathsInsideTheJobFolder: a job file cannot make the CLI
// upload a file from outside its folder (the review's symlink to
// /etc/shadow), unless --allow-outside says so.
func TestLoadKeepsPathsInsideTheJobFolder(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "data.csv"), "a\n1\n")
	mustWrite(t, filepath.Join(dir, "docs", "guide.md"), "# guide\n")
	mustWrite(t, filepath.Join(dir, "linkeddocs", "guide.md"), "# guide\n")
	mustLink(t, secret, filepath.Join(dir, "shadow.csv"))
	mustLink(t, filepath.Join(dir, "data.csv"), filepath.Join(dir, "inside-link.csv"))
	mustLink(t, outside, filepath.Join(dir, "outdir"))
	mustLink(t, secret, filepath.Join(dir, "linkeddocs", "shadow.md"))

	refused := []struct{ name, yaml, want string }{
		{"symlink to a file outside", "samples: {s: shadow.csv}", "shadow.csv is a symbolic link"},
		{"symlink that stays inside", "samples: {s: inside-link.csv}", "inside-link.csv is a symbolic link"},
		{"a folder on the way is a symlink", "samples: {s: outdir/shadow}", "outdir is a symbolic link"},
		{"absolute path", "samples: {s: " + secret + "}", "absolute paths and .. are refused"},
		{"climbing out with ..", "samples: {s: ../" + filepath.Base(outside) + "/shadow}", "absolute paths and .. are refused"},
		{"context outside", "context: [" + outside + "]", "absolute paths and .. are refused"},
		{"context folder holding a symlink", "context: [linkeddocs]", "linkeddocs/shadow.md is a symbolic link"},
		{"context that is a symlink", "context: [outdir]", "outdir is a symbolic link"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			jobPath := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yaml")
			mustWrite(t, jobPath, "prompt: x\n"+tc.yaml+"\n")
			_, err := Load(jobPath, LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--allow-outside") {
				t.Fatalf("err = %v, want a refusal naming %q and the flag", err, tc.want)
			}
		})
	}

	t.Run("inside is fine", func(t *testing.T) {
		t.Parallel()
		jobPath := filepath.Join(dir, "ok.yaml")
		mustWrite(t, jobPath, "prompt: x\nsamples: {s: data.csv}\ncontext: [docs, docs/guide.md]\n")
		spec, err := Load(jobPath, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if spec.Samples["s"] != filepath.Join(dir, "data.csv") || spec.Context[0] != filepath.Join(dir, "docs") {
			t.Errorf("resolved to %v %v", spec.Samples, spec.Context)
		}
	})
	t.Run("allowed outside, links resolved to their targets", func(t *testing.T) {
		t.Parallel()
		jobPath := filepath.Join(dir, "allowed.yaml")
		mustWrite(t, jobPath, "prompt: x\nsamples: {a: shadow.csv, b: "+secret+"}\n")
		spec, err := Load(jobPath, LoadOptions{AllowOutside: true})
		if err != nil {
			t.Fatal(err)
		}
		real, _ := filepath.EvalSymlinks(secret)
		if spec.Samples["a"] != real || spec.Samples["b"] != real {
			t.Errorf("resolved to %v, want both %s", spec.Samples, real)
		}
	})
}

func mustWrite(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestSampleWrapsErrOutside: callers of Sample (submit run --sample) can
// tell a refusal from a missing file.
func TestSampleWrapsErrOutside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustLink(t, "/etc/passwd", filepath.Join(dir, "p.csv"))
	for _, p := range []string{"p.csv", "/etc/passwd", "../x.csv"} {
		if _, err := (LocalFiles{Dir: dir}).Sample(p); !errors.Is(err, ErrOutside) {
			t.Errorf("Sample(%q) = %v, want ErrOutside", p, err)
		}
	}
	if _, err := (LocalFiles{Dir: dir}).Sample("missing.csv"); err == nil || errors.Is(err, ErrOutside) {
		t.Errorf("a missing file: %v, want not found", err)
	}
}

// TestContextFolderFollowsTheLoadersRule: a context folder is checked for
// links where docsearch reads it and nowhere else. Links in a hidden
// folder (.venv) or on files that are not documentation are never read,
// so `--context .` is not refused for them; a link to a folder, or one
// with a documentation name, is (without --allow-outside).
func TestContextFolderFollowsTheLoadersRule(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "notes.md"), "# outside\n")
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "proj", "README.md"), "# readme\n")
	mustWrite(t, filepath.Join(dir, "proj", ".venv", "pyvenv.cfg"), "home = /usr/bin\n")
	mustLink(t, "/usr/bin/python3", filepath.Join(dir, "proj", ".venv", "python"))
	mustLink(t, filepath.Join(outside, "notes.md"), filepath.Join(dir, "proj", "data.csv"))
	lf := LocalFiles{Dir: dir}
	if got, err := lf.Context("proj"); err != nil || got != filepath.Join(dir, "proj") {
		t.Errorf("Context(proj) with links only where docs are not read = %q, %v; want it accepted", got, err)
	}
	mustWrite(t, filepath.Join(dir, "linked", "README.md"), "# readme\n")
	mustLink(t, outside, filepath.Join(dir, "linked", "sub"))
	if _, err := lf.Context("linked"); !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), filepath.Join("linked", "sub")+" is a symbolic link") {
		t.Errorf("Context(linked) with a linked folder = %v, want it refused", err)
	}
}
