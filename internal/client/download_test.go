package client_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestDownloadForgedResult: a result whose output names or manifest try to
// reach outside DIR (a forged result in the results bucket) writes and
// removes nothing outside DIR, and says why.
func TestDownloadForgedResult(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	data := []byte("pwned")
	dataRef := s.putObject(data)
	dataSum, _ := messages.ParseObjectRef(dataRef)
	manifest := func(m sandbox.DirManifest) string {
		b, _ := json.Marshal(m)
		return s.putObject(b)
	}
	good := manifest(sandbox.DirManifest{Files: []sandbox.ManifestFile{{Path: "a.txt", Size: 5, SHA256: dataSum.SHA256}}})
	file := func(ref string) map[string]any { return map[string]any{"object": ref} }

	tests := []struct {
		name    string
		outputs map[string]messages.Type
		values  map[string]any
		setup   func(t *testing.T, base, dir string)
		wantErr string
	}{
		{"a File output named ../../pwned_file", map[string]messages.Type{"../../pwned_file": messages.TypeFile},
			map[string]any{"../../pwned_file": file(dataRef)}, nil, `output "../../pwned_file": not an output name`},
		{"a Dir output named ..", map[string]messages.Type{"..": messages.TypeDir},
			map[string]any{"..": file(good)}, nil, `output "..": not an output name`},
		{"an absolute output name", map[string]messages.Type{"/tmp/x": messages.TypeFile},
			map[string]any{"/tmp/x": file(dataRef)}, nil, "not an output name"},
		{"a Dir entry ../x", map[string]messages.Type{"charts": messages.TypeDir},
			map[string]any{"charts": file(manifest(sandbox.DirManifest{Files: []sandbox.ManifestFile{{Path: "../x", Size: 5, SHA256: dataSum.SHA256}}}))},
			nil, `"../x" is outside the directory`},
		{"a Dir entry a/../../x", map[string]messages.Type{"charts": messages.TypeDir},
			map[string]any{"charts": file(manifest(sandbox.DirManifest{Files: []sandbox.ManifestFile{{Path: "a/../../x", Size: 5, SHA256: dataSum.SHA256}}}))},
			nil, "outside the directory"},
		{"an absolute Dir entry", map[string]messages.Type{"charts": messages.TypeDir},
			map[string]any{"charts": file(manifest(sandbox.DirManifest{Dirs: []string{"/etc/pwned"}}))}, nil, "outside the directory"},
		{"a Dir whose name is a symlink out of DIR", map[string]messages.Type{"charts": messages.TypeDir},
			map[string]any{"charts": file(good)}, func(t *testing.T, base, dir string) {
				symlink(t, filepath.Join(base, "parent"), filepath.Join(dir, "charts"))
			}, "charts exists and is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			dir := filepath.Join(base, "parent", "out")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"sentinel", "parent/sentinel", "parent/out/sentinel"} {
				if err := os.WriteFile(filepath.Join(base, p), []byte("keep"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(t, base, dir)
			}
			before := tree(t, base)
			res := &messages.Result{Spec: &messages.JobSpec{Outputs: tc.outputs}, Outputs: tc.values}
			written, err := s.client.DownloadOutputs(ctxT(t), res, dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("DownloadOutputs: err = %v, want %q", err, tc.wantErr)
			}
			if len(written) != 0 {
				t.Errorf("written %v", written)
			}
			if diff := cmp.Diff(before, tree(t, base)); diff != "" {
				t.Errorf("files changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestDownloadThroughSymlinks: a File output replaces a symbolic link in
// DIR (never writing through it), and a Dir output's entries cannot follow
// one either.
func TestDownloadThroughSymlinks(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	base := t.TempDir()
	dir := filepath.Join(base, "out")
	outside := filepath.Join(base, "outside.txt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(dir, "report"))
	res := &messages.Result{Spec: &messages.JobSpec{Outputs: map[string]messages.Type{"report": messages.TypeFile}},
		Outputs: map[string]any{"report": map[string]any{"object": s.putObject([]byte("new"))}}}
	if _, err := s.client.DownloadOutputs(ctxT(t), res, dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the download wrote through a symlink: outside.txt = %q", b)
	}
	fi, err := os.Lstat(filepath.Join(dir, "report"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Errorf("report: %v %v, want a regular file", fi, err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// tree lists every path under base with its content (files) or kind.
func tree(t *testing.T, base string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			b, _ := os.ReadFile(p)
			out = append(out, rel+": "+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
