package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/agent/workspace"
)

// newWorkspace makes a root holding a file, a directory, a link inside the
// root, links leading out of it (to a directory and dangling), and a
// directory outside it.
func newWorkspace(t *testing.T) (root, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "pkg")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "solution.py"), []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"inner":   "pkg",
		"absin":   filepath.Join(root, "pkg"), // absolute: read on the worker's host, not in the sandbox
		"escape":  outside,
		"relesc":  "../outside",
		"dangles": filepath.Join(outside, "new.txt"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

func TestResolve(t *testing.T) {
	t.Parallel()
	root, _ := newWorkspace(t)
	cases := []struct {
		path string
		want string // relative to root, when allowed
		err  error
	}{
		{path: "solution.py", want: "solution.py"},
		{path: "", want: "."},
		{path: ".", want: "."},
		{path: "pkg/new/module.py", want: "pkg/new/module.py"},
		{path: "./pkg//x.py", want: "pkg/x.py"},
		{path: "new_dir/a/b.txt", want: "new_dir/a/b.txt"},
		{path: "inner/x.py", want: "pkg/x.py"},
		{path: "/etc/passwd", err: workspace.ErrAbsolute},
		{path: "/workspace/solution.py", err: workspace.ErrAbsolute},
		{path: "../outside/x", err: workspace.ErrParent},
		{path: "pkg/../../x", err: workspace.ErrParent},
		{path: "pkg/..", err: workspace.ErrParent},
		{path: "a\x00b", err: workspace.ErrNUL},
		{path: "escape/x.txt", err: workspace.ErrEscape},
		{path: "escape", err: workspace.ErrEscape},
		{path: "relesc/new/x.txt", err: workspace.ErrEscape},
		{path: "dangles", err: workspace.ErrEscape},
		{path: "absin/x.py", err: workspace.ErrEscape},
		{path: "solution.py/x", err: workspace.ErrNotDir},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			got, err := workspace.Resolve(root, tc.path)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %v", tc.path, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.path, err)
			}
			if want := filepath.Join(root, tc.want); got != want {
				t.Errorf("Resolve(%q) = %q, want %q", tc.path, got, want)
			}
		})
	}
}

// TestResolveRootThroughSymlink: a root reached through a link is resolved
// first, so paths inside it are not mistaken for escapes.
func TestResolveRootThroughSymlink(t *testing.T) {
	t.Parallel()
	root, _ := newWorkspace(t)
	link := filepath.Join(t.TempDir(), "rootlink")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	got, err := workspace.Resolve(link, "solution.py")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "solution.py"); got != want {
		t.Errorf("Resolve through a linked root = %q, want %q", got, want)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, content, old, new string
		want                    string
		err                     error
		msg                     string
	}{
		{name: "once", content: "a = 1\nb = 2\n", old: "b = 2", new: "b = 3", want: "a = 1\nb = 3\n"},
		{name: "multi-line", content: "def f():\n    return 1\n", old: "    return 1\n", new: "    return 2\n", want: "def f():\n    return 2\n"},
		{name: "delete", content: "x\ny\n", old: "y\n", new: "", want: "x\n"},
		{name: "absent", content: "a = 1\n", old: "a = 2", err: workspace.ErrNotFound, msg: "copy the text exactly"},
		{name: "twice", content: "x = 1\nx = 1\n", old: "x = 1", err: workspace.ErrNotUnique, msg: "occurs 2 times"},
		{name: "three times", content: "aaa", old: "a", err: workspace.ErrNotUnique, msg: "occurs 3 times"},
		{name: "empty old", content: "abc", old: "", err: workspace.ErrEmptyOld},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := workspace.Edit(tc.content, tc.old, tc.new)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("Edit = %q, %v; want error %v containing %q", got, err, tc.err, tc.msg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Edit = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestResolveErrorsSayNothingOfTheHost: the error for a link leading out
// is the same, word for word apart from the path given, whether its
// target exists, is missing, is a file or a directory, or is unreadable,
// and names no host path.
func TestResolveErrorsSayNothingOfTheHost(t *testing.T) {
	t.Parallel()
	root, outside := newWorkspace(t)
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{
		"to-file":    filepath.Join(outside, "secret.txt"),
		"to-dir":     outside,
		"to-missing": filepath.Join(outside, "missing"),
		"to-proc":    "/proc/self",
		"to-shadow":  "/etc/shadow",
	}
	for name, target := range targets {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	var first string
	for name := range targets {
		for _, p := range []string{name, name + "/x", name + "/x/y.txt"} {
			_, err := workspace.Resolve(root, p)
			if !errors.Is(err, workspace.ErrEscape) {
				t.Fatalf("Resolve(%q) = %v, want ErrEscape", p, err)
			}
			msg := strings.ReplaceAll(err.Error(), p, "PATH")
			if first == "" {
				first = msg
			}
			if msg != first {
				t.Errorf("Resolve(%q) says %q, another link says %q: the words tell targets apart", p, msg, first)
			}
			for _, leak := range []string{root, outside, "/proc", "/etc", strconv.Itoa(os.Getpid())} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("Resolve(%q) = %q names %q", p, err, leak)
				}
			}
		}
	}
}
