package submit

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/jobfile"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestParseInterleaved(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f rerunFlags
	f.register(fs)
	pos, err := parseInterleaved(fs, []string{"--local", "job-1", "--input", "a=1", "--json", "--input=b=-2", "--", "--not-a-flag"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"job-1", "--not-a-flag"}, pos); diff != "" {
		t.Errorf("positional (-want +got):\n%s", diff)
	}
	if !f.local || !f.asJSON || !cmp.Equal(f.inputs, multi{"a=1", "b=-2"}) {
		t.Errorf("flags %+v", f)
	}
}

func TestRerunRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "new.csv")
	os.WriteFile(file, []byte("a\n1\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "extra"), 0o755)
	local := jobfile.LocalFiles{Dir: dir}
	spec := &messages.JobSpec{Samples: map[string]string{"sales": "sha256:" + strings.Repeat("a", 64) + ".csv"},
		Inputs: map[string]messages.Type{"n": messages.TypeInt, "x": messages.TypeFloat, "ok": messages.TypeBool, "s": messages.TypeStr,
			"cfg": messages.TypeFile, "extra": messages.TypeDir}}
	req, files, err := rerunRequest("job-1", spec,
		map[string]string{"n": "+3", "x": "2.50", "ok": "false", "s": "a=b c", "cfg": "new.csv", "extra": "extra"},
		map[string]string{"sales": file}, local)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"n": "3", "x": "2.5", "ok": "false", "s": "a=b c"}, req.Args); diff != "" || req.FromJob != "job-1" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cfg": file, "extra": filepath.Join(dir, "extra"), "sales": file}, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, bad := range []struct {
		inputs, samples map[string]string
		want            string
	}{
		{map[string]string{"ok": "yes"}, nil, `--input ok (bool): "yes" is not true or false`},
		{map[string]string{"n": "1.5"}, nil, `--input n (int)`},
		{map[string]string{"nope": "1"}, nil, "--input nope: job job-1 has no such input (inputs: cfg (File), extra (Dir), n (int), ok (bool), s (str), x (float))"},
		{map[string]string{"cfg": "extra"}, nil, "is not a regular file"},
		{map[string]string{"extra": "new.csv"}, nil, "is not a directory"},
		{map[string]string{"cfg": "missing"}, nil, "not found"},
		{map[string]string{"cfg": file}, nil, "absolute paths and .. are refused"},
		{nil, map[string]string{"orders": file}, "--sample orders: job job-1 has no such sample (samples: sales)"},
		{nil, map[string]string{"sales": dir}, "is not a regular file"},
	} {
		_, _, err := rerunRequest("job-1", spec, bad.inputs, bad.samples, local)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("rerunRequest(%v, %v) = %v, want a usage error with %q", bad.inputs, bad.samples, err, bad.want)
		}
	}
}

// TestRerunDirInputThroughLink: a Dir input given as a symbolic link to a
// folder is refused (without --allow-outside) or resolved to the folder
// (with it), never passed on as a link, which uploaded an empty archive.
func TestRerunDirInputThroughLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.MkdirAll(data, 0o755)
	os.WriteFile(filepath.Join(data, "a.csv"), []byte("a\n1\n"), 0o644)
	if err := os.Symlink(data, filepath.Join(dir, "link_to_dir")); err != nil {
		t.Fatal(err)
	}
	spec := &messages.JobSpec{Inputs: map[string]messages.Type{"data": messages.TypeDir}}
	in := map[string]string{"data": "link_to_dir"}
	_, _, err := rerunRequest("job-1", spec, in, nil, jobfile.LocalFiles{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "link_to_dir is a symbolic link, refused") || !strings.Contains(err.Error(), "--allow-outside") {
		t.Errorf("a linked Dir input without --allow-outside: %v, want a refusal naming the flag", err)
	}
	_, files, err := rerunRequest("job-1", spec, in, nil, jobfile.LocalFiles{Dir: dir, AllowOutside: true})
	real, _ := filepath.EvalSymlinks(data)
	if err != nil || files["data"] != real {
		t.Errorf("a linked Dir input with --allow-outside: %v, %v; want the folder %s", files, err, real)
	}
	os.Symlink("/etc/passwd", filepath.Join(data, "passwd"))
	if _, _, err := rerunRequest("job-1", spec, in, nil, jobfile.LocalFiles{Dir: dir, AllowOutside: true}); err == nil || !strings.Contains(err.Error(), "passwd is a symbolic link") {
		t.Errorf("a Dir input holding a link: %v, want it refused", err)
	}
}

// TestRunUsage: bad `submit run` and `submit task` command lines exit 2
// with one line, before anything starts.
func TestRunUsage(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	for _, args := range [][]string{
		{"run"},
		{"run", "--local"},
		{"run", "a", "b", "--local"},
		{"run", "job-1"}, // no NATS and no --local
		{"run", "job-1", "--local", "--input", "novalue"},
		{"run", "job-1", "--local", "--input", "a=1", "--input", "a=2"},
		{"task"},
		{"task", "frobnicate"},
		{"task", "register", "only-name"},
		{"task", "run"},
		{"run", "--bogus"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), args, cfg, IO{Stdout: &stdout, Stderr: &stderr})
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
	}
}

// TestEverySubcommandTakesNATSCredentials: each subcommand that talks to
// NATS lists the credential flags in its --help, on stdout.
func TestEverySubcommandTakesNATSCredentials(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	for _, args := range [][]string{{"--help"}, {"status", "--help"}, {"result", "--help"}, {"events", "--help"},
		{"run", "--help"}, {"task", "list", "--help"}, {"task", "register", "--help"}, {"cancel", "--help"}} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), args, cfg, IO{Stdout: &stdout, Stderr: &stderr})
		if code != ExitSuccess {
			t.Errorf("%q: exit %d, want 0", args, code)
		}
		for _, f := range []string{"-nats-user", "-nats-password-file", "-nats-nkey-file", "-nats-creds-file", "-nats-ca-file"} {
			if !strings.Contains(stdout.String(), f) {
				t.Errorf("%q does not list %s:\n%s", args, f, stdout.String())
				break
			}
		}
	}
}
