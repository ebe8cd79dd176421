package sandboxstages

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/agent/shellpolicy"
	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// workspaceArchive is the file under /var/outputs the bash wrapper writes
// the workspace to after the command, to bring it back.
const workspaceArchive = "agent-workspace.tar"

// bashResultBudget bounds a command's output as the model reads it.
const bashResultBudget = 8000

// bash checks a command with the shell policy, then runs it inside the
// sandbox with the workspace mounted (never on this host): no network,
// the job's env_vars but not its secrets (bashSpec), the job's limits. A command that runs pytest is not run here: the job's
// test stage runs the tests.
func (h *Handlers) bash(ctx context.Context, cmd *messages.StageCommand, in messages.AgentToolInput, root string) (messages.AgentToolOutput, error) {
	out := messages.AgentToolOutput{Workspace: in.Workspace}
	command, err := bashCommand(in.Call.Arguments)
	if err != nil {
		out.Verdict, out.Result = messages.VerdictError, err.Error()
		return out, nil
	}
	v := shellpolicy.Check(command)
	switch {
	case !v.Allowed:
		out.Verdict, out.Result = messages.VerdictDenied, "denied by the shell policy: "+v.Reason
		return out, nil
	case v.Pytest:
		out.Verdict, out.Result = messages.VerdictTests, "pytest runs as the job's test stage; nothing else of this command runs"
		return out, nil
	}
	spec, redact, cleanup, err := h.bashSpec(ctx, cmd, in, root, command)
	if err != nil {
		return out, err
	}
	defer cleanup()
	res, err := h.backend.Run(ctx, spec)
	if err != nil {
		return out, fmt.Errorf("run bash in %s sandbox: %w", h.backend.Name(), err)
	}
	if redact != nil { // what the model reads names no secret's value
		res.Stdout, res.Stderr = redact(res.Stdout), redact(res.Stderr)
	}
	out.Verdict, out.Result, out.TimedOut = messages.VerdictOK, bashResult(res), res.TimedOut
	archive, ok := res.Outputs[workspaceArchive]
	if !ok {
		out.Result += "\n(the workspace was not collected after the command, so its changes are lost)"
		return out, nil
	}
	if err := replaceTree(root, archive); err != nil {
		if errors.Is(err, errWorkspaceFull) {
			return out, err
		}
		// The command's to answer for (a crafted archive): the model is
		// told, and the workspace stays as it was.
		out.Verdict = messages.VerdictError
		out.Result += "\n(the workspace could not be read back after the command, so its changes are lost: " + err.Error() + ")"
		return out, nil
	}
	return out, nil
}

func bashCommand(arguments string) (string, error) {
	var args struct {
		Command *string `json:"command"`
	}
	if err := json.Unmarshal(toolArguments(arguments), &args); err != nil {
		return "", fmt.Errorf("the arguments of bash are not a JSON object: %w", err)
	}
	if args.Command == nil || strings.TrimSpace(*args.Command) == "" {
		return "", errors.New("bash needs a command")
	}
	return *args.Command, nil
}

// bashSpec is the sandbox run of one command: the workspace's files, its
// links made again by the wrapper, the samples under /var/inputs, the
// job's env_vars (and what redacts its secrets' values from the output).
//
// The job's secrets are not in a command's environment. Redaction cuts out
// a value only as it is: the model drives this shell, and one instruction
// hidden in a sample (printenv | base64) would hand it the secret in a
// form no redaction knows. The test and acceptance runs, whose code the
// job keeps, get them as every other run of the job does.
func (h *Handlers) bashSpec(ctx context.Context, cmd *messages.StageCommand, in messages.AgentToolInput, root, command string) (spec sandbox.RunSpec, redact func([]byte) []byte, cleanup func(), err error) {
	vars, redact, err := h.jobEnv(cmd) // settings.go
	if err != nil {
		return spec, nil, nil, bus.Permanent(err)
	}
	if cmd.Settings != nil {
		for _, name := range cmd.Settings.Secrets {
			delete(vars, name)
		}
	}
	files := map[string][]byte{}
	var links strings.Builder
	for _, p := range slices.Sorted(maps.Keys(in.Workspace)) {
		if target, ok := strings.CutPrefix(in.Workspace[p], messages.SymlinkPrefix); ok {
			fmt.Fprintf(&links, "mkdir -p -- %s && ln -sfn -- %s %s\n", shellQuote(path.Dir(p)), shellQuote(target), shellQuote(p))
			continue
		}
		if in.Workspace[p] == messages.DirEntry {
			fmt.Fprintf(&links, "mkdir -p -- %s\n", shellQuote(p))
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return spec, nil, nil, err
		}
		files[p] = data
	}
	inputs, err := h.fetch(ctx, in.Samples)
	if err != nil {
		return spec, nil, nil, err
	}
	inputs, cleanup, err = unpackDirs(in.Samples, inputs)
	if err != nil {
		return spec, nil, nil, err
	}
	env, err := h.backend.Build(ctx, sandbox.EnvSpec{Packages: in.Env.Packages, SystemPackages: in.Env.SystemPackages, Name: in.Env.Name})
	if err != nil {
		cleanup()
		return spec, nil, nil, fmt.Errorf("prepare environment: %w", err)
	}
	if vars == nil {
		vars = map[string]string{}
	}
	vars["PYTHONDONTWRITEBYTECODE"], vars["MPLBACKEND"] = "1", "Agg"
	l := h.limits(cmd.JobID, cmd.Stage, in.Timeout, in.Resources)
	// The command runs in a shell of its own; the wrapper then archives
	// the workspace, whatever the command did, and exits with its status.
	// The archive gets its name only once tar has written all of it: one
	// cut short (a file tar cannot read, the run's time up) is not taken
	// for the whole workspace.
	wrapper := "cd " + sandbox.WorkspaceDir + "\n" + links.String() +
		"bash -c \"$1\" </dev/null\nstatus=$?\ncd " + sandbox.WorkspaceDir +
		" && tar --exclude=./.harness -cf " + sandbox.OutputsDir + "/" + workspaceArchive + ".part . 2>/dev/null" +
		" && mv " + sandbox.OutputsDir + "/" + workspaceArchive + ".part " + sandbox.OutputsDir + "/" + workspaceArchive + "\nexit $status\n"
	return sandbox.RunSpec{
		Env: env.ID, Files: files, Inputs: inputs,
		Argv:    []string{"bash", "-c", wrapper, "agent-bash", command},
		EnvVars: vars,
		Timeout: l.timeout, Memory: l.memory, CPUs: l.cpus, OutputLimit: 64 << 10,
		CollectOutputs: true, JobID: cmd.JobID,
	}, redact, cleanup, nil
}

// bashResult is a command's exit status and output, as the model reads it.
func bashResult(res sandbox.RunResult) string {
	var b strings.Builder
	if res.TimedOut {
		b.WriteString("the command timed out and was killed\n")
	}
	fmt.Fprintf(&b, "exit code %d\n", res.ExitCode)
	b.Write(res.Stdout)
	if len(res.Stderr) > 0 {
		b.WriteString("\n--- stderr ---\n")
		b.Write(res.Stderr)
	}
	return trim.HeadTail(strings.ToValidUTF8(b.String(), "\uFFFD"), bashResultBudget)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// replaceTree empties root and unpacks the archive into it: directories,
// regular files and symbolic links (kept as links, never followed), every
// entry inside root and under no link.
func replaceTree(root string, archive []byte) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			return err
		}
	}
	tr := tar.NewReader(bytes.NewReader(archive))
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the workspace archive: %w", err)
		}
		if n > 4*maxWorkspaceFiles {
			return fmt.Errorf("%w: the workspace has more than %d entries", errWorkspaceFull, 4*maxWorkspaceFiles)
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." || name == ".harness" || strings.HasPrefix(name, ".harness/") {
			continue
		}
		if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) || underLink(root, name) {
			continue // not the wrapper's archive of /workspace: leave it out
		}
		if total += hdr.Size; total > maxWorkspaceBytes {
			return fmt.Errorf("%w: the workspace holds more than %d bytes", errWorkspaceFull, maxWorkspaceBytes)
		}
		if err := unpackEntry(root, name, hdr, tr); err != nil {
			return err
		}
	}
}

func unpackEntry(root, name string, hdr *tar.Header, r io.Reader) error {
	target := filepath.Join(root, filepath.FromSlash(name))
	switch hdr.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(target, 0o755)
	case tar.TypeSymlink:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.Symlink(hdr.Linkname, target)
	case tar.TypeReg:
		return createFile(target, r, hdr.Size) // files.go
	case tar.TypeLink:
		// A hard link (cp -l, ln without -s): tar archives the second
		// name as a link to the first, already unpacked; it becomes a
		// copy of that file, as the workspace keeps files by content.
		src := path.Clean(strings.TrimPrefix(hdr.Linkname, "./"))
		if !filepath.IsLocal(src) || underLink(root, src) {
			return nil
		}
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(src)))
		if err != nil {
			return nil // not unpacked (left out above): nor is its link
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		return createFile(target, f, fi.Size())
	}
	return nil // devices, FIFOs: not workspace files
}

// underLink reports whether a parent of name inside root is a symbolic link.
func underLink(root, name string) bool {
	dir := path.Dir(name)
	for dir != "." && dir != "/" {
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir))); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return true
		}
		dir = path.Dir(dir)
	}
	return false
}
