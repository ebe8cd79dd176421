package sandboxstages

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestReplaceTreeKeepsEntriesInside: an archive that is not a plain copy of
// /workspace (a command that rewrote it behind the wrapper's back) cannot
// put a file outside the workspace: not through a link it also holds, not
// with .. or an absolute name.
func TestReplaceTreeKeepsEntriesInside(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeDir {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(body))
		}
	}
	add(&tar.Header{Name: "./ok.py", Typeflag: tar.TypeReg, Mode: 0o644}, "print(1)\n")
	add(&tar.Header{Name: "./out", Typeflag: tar.TypeSymlink, Linkname: outside}, "")
	add(&tar.Header{Name: "./out/evil", Typeflag: tar.TypeReg, Mode: 0o644}, "x")
	add(&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644}, "x")
	add(&tar.Header{Name: filepath.Join(outside, "abs"), Typeflag: tar.TypeReg, Mode: 0o644}, "x")
	add(&tar.Header{Name: "./.harness/junit.xml", Typeflag: tar.TypeReg, Mode: 0o644}, "<x/>")
	tw.Close()

	root := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "stale.txt"), []byte("old"), 0o644)
	if err := replaceTree(root, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files reached the directory outside: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "evil")); err == nil {
		t.Error("../evil was written beside the workspace")
	}
	got := map[string]bool{}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		got[e.Name()] = true
	}
	if !got["ok.py"] || !got["out"] || got["stale.txt"] || got[".harness"] || len(got) != 2 {
		t.Errorf("workspace after unpacking: %v", got)
	}
}

func TestFileToolErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.py"), []byte("x = 1\nx = 1\n"), 0o644)
	os.Symlink("/etc", filepath.Join(root, "etc"))
	tests := []struct{ tool, args, want string }{
		{messages.ToolEditFile, `{"path":"a.py","old":"y = 2","new":"z"}`, "old text not found"},
		{messages.ToolEditFile, `{"path":"a.py","old":"x = 1","new":"z"}`, "occurs 2 times"},
		{messages.ToolReadFile, `{"path":"etc/passwd"}`, "outside the workspace through a symbolic link"},
		{messages.ToolWriteFile, `{"path":"/tmp/x","content":"x"}`, "absolute path"},
		{messages.ToolWriteFile, `{"path":"a/../../x","content":"x"}`, "leaves the workspace with .."},
		{messages.ToolReadFile, `{"path":"missing.py"}`, "read_file missing.py: no such file or directory"},
		{messages.ToolReadFile, `not json`, "not a JSON object"},
		{"rm_rf", `{}`, `there is no tool "rm_rf"`},
		{messages.ToolWriteFile, `{"path":"b.py"}`, "needs path and content"},
		// Without new the old text would silently go.
		{messages.ToolEditFile, `{"path":"a.py","old":"x = 1","replacement":"z"}`, "needs path, old and new"},
	}
	for _, tc := range tests {
		verdict, result := fileTool(root, messages.AgentToolCall{Name: tc.tool, Arguments: tc.args})
		if verdict != messages.VerdictError || !strings.Contains(result, tc.want) {
			t.Errorf("%s %s: %s %q, want an error with %q", tc.tool, tc.args, verdict, result, tc.want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(root, "a.py")); string(data) != "x = 1\nx = 1\n" {
		t.Errorf("a failed edit changed the file: %q", data)
	}
}

// TestFileToolErrorsSayNothingOfTheHost: the file tools' errors, which the
// model reads, name no path of the worker's host, not its pid (a link to
// /proc/self), and read the same whether a link's target on the host
// exists, is missing, is a file or a directory.
func TestFileToolErrorsSayNothingOfTheHost(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("s"), 0o600)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644)
	links := map[string]string{
		"to-file": filepath.Join(outside, "secret.txt"), "to-dir": outside,
		"to-missing": filepath.Join(outside, "missing"), "to-proc": "/proc/self",
		"to-shadow": "/etc/shadow", "to-passwd": "/etc/passwd",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	leaks := []string{base, "/proc", "/etc", "/tmp", strconv.Itoa(os.Getpid())}
	call := func(tool, path string) string {
		args := map[string]string{"path": path, "content": "x", "old": "a", "new": "b"}
		raw, _ := json.Marshal(args)
		verdict, result := fileTool(root, messages.AgentToolCall{Name: tool, Arguments: string(raw)})
		if verdict != messages.VerdictError {
			t.Errorf("%s %q: verdict %s (%s), want an error", tool, path, verdict, result)
		}
		said := strings.ReplaceAll(result, path, "PATH") // the model's own path may be echoed
		for _, leak := range leaks {
			if strings.Contains(said, leak) {
				t.Errorf("%s %q: %q names %q", tool, path, result, leak)
			}
		}
		return said
	}
	for _, tool := range []string{messages.ToolReadFile, messages.ToolWriteFile, messages.ToolEditFile, messages.ToolListFiles} {
		for _, p := range []string{"../outside/secret.txt", "/etc/passwd", "a.txt/x"} {
			call(tool, p)
		}
		if tool != messages.ToolWriteFile {
			call(tool, "missing.txt")
		}
		for _, suffix := range []string{"", "/x"} {
			var first string
			for name := range links {
				p := name + suffix
				got := call(tool, p)
				if first == "" {
					first = got
				}
				if got != first {
					t.Errorf("%s through links: %q and %q differ, so the host's files can be told apart", tool, got, first)
				}
			}
		}
	}
}

// TestToolArgumentsInOtherShapes: arguments as models send them besides a
// JSON object (the object encoded again as a JSON string, nothing at all
// for a call without arguments) are read as the object they mean.
func TestToolArgumentsInOtherShapes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.py"), []byte("x = 1\n"), 0o644)
	for _, tc := range []struct{ tool, args, want string }{
		{messages.ToolReadFile, `"{\"path\": \"a.py\"}"`, "x = 1"},
		{messages.ToolListFiles, ``, "a.py"},
		{messages.ToolListFiles, `null`, "a.py"},
	} {
		verdict, result := fileTool(root, messages.AgentToolCall{Name: tc.tool, Arguments: tc.args})
		if verdict != messages.VerdictOK || !strings.Contains(result, tc.want) {
			t.Errorf("%s %s: %s %q, want it read with %q", tc.tool, tc.args, verdict, result, tc.want)
		}
	}
	if cmd, err := bashCommand(`"{\"command\": \"ls\"}"`); err != nil || cmd != "ls" {
		t.Errorf("bash with its arguments encoded again: %q, %v", cmd, err)
	}
}
