package sandboxstages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/agent/workspace"
	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/stagework"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Bounds of the agent's workspace and of what a tool returns.
const (
	maxWorkspaceFiles = 500
	maxWorkspaceBytes = 32 << 20 // all files together
	maxWrittenFile    = 256 << 10
	maxReadResult     = 64 << 10
	maxListed         = 300
	// maxOwnFile bounds each of the job's own files: their contents travel
	// in every tool result and live in the job's state (one KV value).
	maxOwnFile = 64 << 10
)

// errWorkspaceFull marks a workspace past its bounds: the call's changes
// are undone and the model told why, the job goes on.
var errWorkspaceFull = errors.New("workspace full")

// ownFiles are the job's own files: their contents go back to the
// coordinator with every tool result (AgentToolOutput.Files).
var ownFiles = []string{protocol.SolutionFile, protocol.TestFile, "packages.txt", "system_packages.txt"}

// agentTool does one tool call on a temporary copy of the workspace and
// stores what it changed. A tool that cannot do what it is asked (a path
// outside the workspace, an edit whose old text is absent) is a result for
// the model, not a failed stage.
func (h *Handlers) agentTool(ctx context.Context, cmd *messages.StageCommand, in messages.AgentToolInput) (stagework.Output[messages.AgentToolOutput], error) {
	var none stagework.Output[messages.AgentToolOutput]
	h, err := h.forPython(cmd) // the handlers of the job's Python version (settings.go)
	if err != nil {
		return none, bus.Permanent(err)
	}
	if h.workspace == nil {
		return none, bus.Permanent(errors.New("this sandbox worker has no workspace store for agent tool calls"))
	}
	// The job's secrets are in its bash commands' environment, so any file
	// a command wrote may hold one: every tool's result and the job's own
	// files are redacted before the model or the job's state sees them.
	_, redact, err := h.jobEnv(cmd) // settings.go
	if err != nil {
		return none, bus.Permanent(err)
	}
	root, err := os.MkdirTemp("", "autocoder-agent-*")
	if err != nil {
		return none, err
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o755); err != nil {
		return none, err
	}
	if err := h.materialize(ctx, root, in.Workspace); err != nil {
		return none, err
	}
	out := messages.AgentToolOutput{Workspace: in.Workspace}
	switch in.Call.Name {
	case messages.ToolBash:
		out, err = h.bash(ctx, cmd, in, root)
	case messages.ToolRunTests:
		out.Verdict, out.Result = messages.VerdictTests, "the tests run as the job's test stage"
	default:
		out.Verdict, out.Result = fileTool(root, in.Call)
	}
	if err == nil && out.Verdict == messages.VerdictOK && in.Call.Name != messages.ToolReadFile && in.Call.Name != messages.ToolListFiles {
		out.Workspace, err = h.collect(ctx, root)
	}
	if errors.Is(err, errWorkspaceFull) {
		out.Result += "\n" + strings.TrimPrefix(err.Error(), errWorkspaceFull.Error()+": ") + ": the change was undone; remove files instead of adding them"
		out.Verdict, out.Workspace, err = messages.VerdictError, in.Workspace, nil
	}
	if err != nil {
		return none, err
	}
	if out.Files, err = h.ownFiles(ctx, out.Workspace); err != nil {
		return none, err
	}
	if big := oversized(out.Files); big != "" {
		// The call's changes are dropped: the job could not keep the file.
		out.Verdict = messages.VerdictError
		out.Result = fmt.Sprintf("%s would be %d bytes, more than the %d a job keeps of it: the change was undone; make the file smaller (put data in another file)",
			big, len(out.Files[big]), maxOwnFile)
		out.Workspace = in.Workspace
		if out.Files, err = h.ownFiles(ctx, out.Workspace); err != nil {
			return none, err
		}
	}
	if redact != nil {
		out.Result = string(redact([]byte(out.Result)))
		for name, text := range out.Files {
			out.Files[name] = string(redact([]byte(text)))
		}
	}
	return stagework.Output[messages.AgentToolOutput]{Value: out}, nil
}

// oversized names an own file larger than maxOwnFile, or returns "".
func oversized(files map[string]string) string {
	for _, name := range ownFiles {
		if len(files[name]) > maxOwnFile {
			return name
		}
	}
	return ""
}

// toolArguments are a tool call's arguments as the JSON object the tools
// read. Models send other shapes too: nothing at all for a call that
// needs no argument, or the object encoded once more, as a JSON string;
// neither is something the model could tell it got wrong.
func toolArguments(raw string) []byte {
	b := bytes.TrimSpace([]byte(raw))
	if len(b) == 0 || string(b) == "null" {
		return []byte("{}")
	}
	var inner string
	if b[0] == '"' && json.Unmarshal(b, &inner) == nil {
		if t := strings.TrimSpace(inner); strings.HasPrefix(t, "{") {
			return []byte(t)
		}
	}
	return b
}

// fileTool does write_file, read_file, edit_file and list_files in root.
func fileTool(root string, call messages.AgentToolCall) (verdict, result string) {
	var args struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
		Old     *string `json:"old"`
		New     *string `json:"new"`
	}
	if err := json.Unmarshal(toolArguments(call.Arguments), &args); err != nil {
		return messages.VerdictError, fmt.Sprintf("the arguments of %s are not a JSON object: %v", call.Name, err)
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	var err error
	switch call.Name {
	case messages.ToolWriteFile:
		result, err = writeFile(root, str(args.Path), args.Content)
	case messages.ToolReadFile:
		result, err = readFile(root, str(args.Path))
	case messages.ToolEditFile:
		result, err = editFile(root, str(args.Path), args.Old, args.New)
	case messages.ToolListFiles:
		result, err = listFiles(root, str(args.Path))
	default:
		return messages.VerdictError, fmt.Sprintf("there is no tool %q: the tools are %s", call.Name, strings.Join(messages.AgentTools(), ", "))
	}
	if err != nil {
		return messages.VerdictError, err.Error()
	}
	return messages.VerdictOK, result
}

func writeFile(root, path string, content *string) (string, error) {
	if path == "" || content == nil {
		return "", errors.New("write_file needs path and content")
	}
	if len(*content) > maxWrittenFile {
		return "", fmt.Errorf("write_file: %d bytes is more than the %d a file may have", len(*content), maxWrittenFile)
	}
	full, err := workspace.Resolve(root, path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(full); err == nil && fi.IsDir() {
		return "", fmt.Errorf("write_file: %s is a directory", path)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", fmt.Errorf("write_file %s: %w", path, hostless(err))
	}
	if err := os.WriteFile(full, []byte(*content), 0o644); err != nil {
		return "", fmt.Errorf("write_file %s: %w", path, hostless(err))
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(*content), path), nil
}

func readFile(root, path string) (string, error) {
	if path == "" {
		return "", errors.New("read_file needs a path")
	}
	full, err := workspace.Resolve(root, path)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "", fmt.Errorf("read_file %s: %w", path, hostless(err))
	}
	return trim.Middle(string(data), maxReadResult), nil
}

func editFile(root, path string, old, replacement *string) (string, error) {
	if path == "" || old == nil || replacement == nil {
		// Without new, the old text would be cut out: a model that named
		// the field otherwise would lose code without knowing it.
		return "", errors.New("edit_file needs path, old and new (new may be empty, but must be given)")
	}
	full, err := workspace.Resolve(root, path)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return "", fmt.Errorf("edit_file %s: %w", path, hostless(err))
	}
	edited, err := workspace.Edit(string(data), *old, *replacement)
	if err != nil {
		return "", fmt.Errorf("edit_file %s: %w", path, err)
	}
	if err := os.WriteFile(full, []byte(edited), 0o644); err != nil {
		return "", fmt.Errorf("edit_file %s: %w", path, hostless(err))
	}
	return "edited " + path, nil
}

func listFiles(root, path string) (string, error) {
	if path == "" {
		path = "."
	}
	full, err := workspace.Resolve(root, path)
	if err != nil {
		return "", err
	}
	var lines []string
	err = filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case p == full && d.IsDir():
			return nil
		case len(lines) >= maxListed:
			return fs.SkipAll
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			lines = append(lines, rel+" -> "+target)
		case d.IsDir():
			lines = append(lines, rel+"/")
		default:
			info, _ := d.Info()
			lines = append(lines, fmt.Sprintf("%s (%d bytes)", rel, info.Size()))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list_files %s: %w", path, hostless(err))
	}
	if len(lines) == 0 {
		return "(no files)", nil
	}
	return strings.Join(lines, "\n"), nil
}

// hostless is an I/O error without the worker's paths in it: what went
// wrong ("no such file or directory"), for the path the model gave, which
// the caller names. The model reads it, and the worker's folders, its pid
// (a /proc path) or whether a host path exists are none of its business.
func hostless(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return errors.New("input/output error")
}

// materialize writes the workspace into root.
func (h *Handlers) materialize(ctx context.Context, root string, ws messages.Workspace) error {
	if len(ws) > maxWorkspaceFiles {
		return bus.Permanent(fmt.Errorf("workspace has %d files, more than %d", len(ws), maxWorkspaceFiles))
	}
	for _, p := range slices.Sorted(maps.Keys(ws)) {
		if !filepath.IsLocal(p) || strings.ContainsRune(p, 0) {
			return bus.Permanent(fmt.Errorf("workspace path %q is not inside the workspace", p))
		}
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if target, ok := strings.CutPrefix(ws[p], messages.SymlinkPrefix); ok {
			if err := os.Symlink(target, full); err != nil {
				return err
			}
			continue
		}
		if ws[p] == messages.DirEntry {
			if err := os.MkdirAll(full, 0o755); err != nil {
				return err
			}
			continue
		}
		data, err := h.workspace.Get(ctx, ws[p])
		if err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// collect stores the files under root and returns the workspace they make.
func (h *Handlers) collect(ctx context.Context, root string) (messages.Workspace, error) {
	ws := messages.Workspace{}
	total := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == ".harness" {
			return fs.SkipDir
		}
		if len(ws) >= maxWorkspaceFiles {
			return fmt.Errorf("%w: the workspace has more than %d files", errWorkspaceFull, maxWorkspaceFiles)
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			ws[rel] = messages.SymlinkPrefix + target
		case d.IsDir():
			if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
				ws[rel] = messages.DirEntry // empty: nothing else would say it is there
			}
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if total += len(data); total > maxWorkspaceBytes {
				return fmt.Errorf("%w: the workspace holds more than %d bytes", errWorkspaceFull, maxWorkspaceBytes)
			}
			if ws[rel], err = h.workspace.Put(ctx, data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errWorkspaceFull) {
		err = bus.Permanent(fmt.Errorf("collect the workspace: %w", err))
	}
	return ws, err
}

// ownFiles reads the job's own files from the workspace.
func (h *Handlers) ownFiles(ctx context.Context, ws messages.Workspace) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range ownFiles {
		ref, ok := ws[name]
		if !ok || strings.HasPrefix(ref, messages.SymlinkPrefix) || ref == messages.DirEntry {
			continue
		}
		data, err := h.workspace.Get(ctx, ref)
		if err != nil {
			return nil, err
		}
		out[name] = strings.ToValidUTF8(string(data), "\uFFFD")
	}
	return out, nil
}
