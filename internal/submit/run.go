package submit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/stack"
	"github.com/autocoder/autocoder/pkg/messages"
)

// runFlags are the flags of `submit run` and `submit task run`.
type runFlags struct {
	local   bool
	asJSON  bool
	outDir  string
	wait    time.Duration
	inputs  multi
	samples multi
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.local, "local", false, "run on embedded defaults: in-process NATS, coordinator and sandbox worker")
	fs.BoolVar(&f.asJSON, "json", false, "print the run's result object (Contract 5 (docs/contracts.md)) as JSON on stdout")
	fs.StringVar(&f.outDir, "out", "", "write result.json and the File and Dir outputs to this folder")
	fs.DurationVar(&f.wait, "wait", 30*time.Minute, "how long to wait for the run")
	fs.Var(&f.inputs, "input", "name=value of an input (repeatable); a File or Dir input's value is a local path")
	fs.Var(&f.samples, "sample", "name=path of a new sample file in place of the job's (repeatable)")
}

// parseInterleaved parses flags that may come before and after the
// positional arguments (`submit run JOB --input a=1`), and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// runCmd is `submit run JOB_ID [flags]`: the job's generated script on new
// data, with typed outputs back.
func runCmd(ctx context.Context, args []string, cfg config.Config, io IO) (int, error) {
	fs := flag.NewFlagSet("submit run", flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	var f runFlags
	f.register(fs)
	cfg.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(io.Stderr, "usage: submit run JOB_ID [--local] [--input name=value] [--sample name=path] [--json] [--out DIR]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitSuccess, nil // asked for help: not an error
		}
		return 0, usagef("%v", err)
	}
	if len(pos) != 1 {
		return 0, usagef("usage: submit run JOB_ID [--input name=value] [--sample name=path] [--json] [--out DIR]")
	}
	return runJob(ctx, pos[0], "", f, cfg, io)
}

// runJob runs the script of job from (of task, when named) and reports
// like a job: exit 0 when the script ran and every output parsed, 1 when
// it did not, 2 for bad input, 3 for infrastructure.
func runJob(ctx context.Context, from, task string, f runFlags, cfg config.Config, io IO) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, usagef("%v", err)
	}
	if !f.local && cfg.NATSURL == "" {
		return 0, usagef("no NATS to join: set AUTOCODER_NATS_URL, or use --local for embedded defaults")
	}
	// The values are checked before anything starts that can fail slowly.
	inputs, err := pairs(f.inputs, "input")
	if err != nil {
		return 0, err
	}
	samples, err := pairs(f.samples, "sample")
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	opts := cliStack(cfg, io)
	// A run calls no model: a coordinator and a sandbox worker are all it needs.
	opts.Coordinator, opts.SandboxWorker = f.local, f.local
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return 0, err
	}
	defer st.Close()

	if task != "" {
		t, err := st.Client.Task(ctx, task)
		if errors.Is(err, client.ErrNoTask) {
			return 0, usagef("task %s: not registered (see submit task list)", task)
		}
		if err != nil {
			return 0, err
		}
		from = t.JobID
	}
	src, err := st.Client.Result(ctx, from)
	if errors.Is(err, client.ErrNotFound) {
		return 0, usagef("job %s: not found (or not finished)", from)
	}
	if err != nil {
		return 0, err
	}
	if !src.Success || src.Spec == nil || src.Solution == nil {
		return 0, usagef("job %s did not succeed, so it has no tested script to run", from)
	}
	req, files, err := runRequest(from, src.Spec, inputs, samples)
	if err != nil {
		return 0, err
	}

	id := client.NewJobID()
	if err := st.Client.Run(ctx, id, req, files); err != nil {
		return 0, err
	}
	fmt.Fprintf(io.Stderr, "run %s of job %s submitted\n", id, from)
	p := newProgress(io)
	res, err := st.Client.Watch(ctx, id, p.event)
	p.done()
	if err != nil {
		return 0, fmt.Errorf("run %s: %w", id, err)
	}
	var downloaded []string
	if f.outDir != "" {
		if downloaded, err = saveOut(ctx, st.Client, f.outDir, res); err != nil {
			return 0, err
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(io.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return 0, err
		}
	} else {
		printRun(io.Stdout, from, res, downloaded)
	}
	if !res.Success && strings.HasPrefix(res.Error, "invalid job spec: ") {
		return ExitUsage, nil // the coordinator found the request bad
	}
	return exitCode(res), nil
}

// pairs splits name=value flags; a name given twice is an error.
func pairs(list multi, flagName string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range list {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usagef("--%s %q: want name=value", flagName, s)
		}
		if _, dup := out[k]; dup {
			return nil, usagef("--%s %s: given twice", flagName, k)
		}
		out[k] = v
	}
	return out, nil
}

// runRequest checks inputs and samples against the job's spec, strictly,
// and returns the request and the local files to upload.
func runRequest(from string, spec *messages.JobSpec, inputs, samples map[string]string) (messages.RunRequest, map[string]string, error) {
	req := messages.RunRequest{FromJob: from, Args: map[string]string{}}
	files := map[string]string{}
	for _, name := range sortedKeys(inputs) {
		v := inputs[name]
		t, ok := spec.Inputs[name]
		if !ok {
			return req, nil, usagef("--input %s: job %s has no such input (inputs: %s)", name, from, typeList(spec.Inputs))
		}
		switch t {
		case messages.TypeFile, messages.TypeDir:
			if err := checkPath(v, t == messages.TypeDir); err != nil {
				return req, nil, usagef("--input %s (%s): %v", name, t, err)
			}
			files[name] = v
		default:
			canon, err := messages.ParseInputValue(t, v)
			if err != nil {
				return req, nil, usagef("--input %s (%s): %v", name, t, err)
			}
			req.Args[name] = canon
		}
	}
	for _, name := range sortedKeys(samples) {
		if _, ok := spec.Samples[name]; !ok {
			return req, nil, usagef("--sample %s: job %s has no such sample (samples: %s)", name, from, strings.Join(sortedKeys(spec.Samples), ", "))
		}
		if err := checkPath(samples[name], false); err != nil {
			return req, nil, usagef("--sample %s: %v", name, err)
		}
		files[name] = samples[name]
	}
	if len(req.Args) == 0 {
		req.Args = nil
	}
	return req, files, nil
}

func checkPath(p string, dir bool) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case dir && !fi.IsDir():
		return fmt.Errorf("%s is not a directory", p)
	case !dir && !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	}
	return nil
}

func typeList(m map[string]messages.Type) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, messages.QuoteName(k)+" ("+messages.QuoteName(string(m[k]))+")")
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func printRun(w io.Writer, from string, r *messages.Result, downloaded []string) {
	if r.Success {
		fmt.Fprintf(w, "SUCCESS: the script of job %s ran and wrote every output\n", from)
	} else {
		fmt.Fprintf(w, "FAILED: %s\n", messages.Printable(r.Error))
	}
	fmt.Fprintf(w, "run %s\n", r.JobID)
	if len(r.Outputs) > 0 {
		fmt.Fprintln(w, "outputs:")
		for _, k := range sortedKeys(r.Outputs) {
			b, _ := json.Marshal(r.Outputs[k])
			fmt.Fprintf(w, "  %s = %s\n", messages.QuoteName(k), messages.Printable(string(b)))
		}
	}
	for _, p := range downloaded {
		fmt.Fprintf(w, "downloaded %s\n", p)
	}
	if !r.Success && strings.TrimSpace(r.Output) != "" {
		fmt.Fprintf(w, "\n# output of the script\n%s\n", messages.Printable(strings.TrimRight(r.Output, "\n")))
	}
}

// taskCmd is `submit task register|run|list|show|delete`.
func taskCmd(ctx context.Context, args []string, cfg config.Config, io IO) (int, error) {
	usage := usagef("usage: submit task register NAME JOB_ID [--description TEXT] | task run NAME [--input name=value] [--sample name=path] [--json] [--out DIR] [--local] | task list [--json] | task show NAME | task delete NAME")
	if len(args) == 0 {
		return 0, usage
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("submit task "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	var f runFlags
	var description string
	switch sub {
	case "run":
		f.register(fs)
	case "register":
		fs.StringVar(&description, "description", "", "what the task is for, for listings")
	case "list":
		fs.BoolVar(&f.asJSON, "json", false, "print the tasks as JSON")
	case "show", "delete":
	default:
		return 0, usage
	}
	cfg.Register(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitSuccess, nil // asked for help: not an error
		}
		return 0, usagef("%v", err)
	}
	want := map[string]int{"run": 1, "register": 2, "list": 0, "show": 1, "delete": 1}[sub]
	if len(pos) != want {
		return 0, usage
	}
	if sub == "run" {
		return runJob(ctx, "", pos[0], f, cfg, io)
	}
	if err := cfg.Validate(); err != nil {
		return 0, usagef("%v", err)
	}
	st, err := stack.Start(ctx, cliStack(cfg, io))
	if err != nil {
		return 0, err
	}
	defer st.Close()
	enc := json.NewEncoder(io.Stdout)
	enc.SetIndent("", "  ")
	switch sub {
	case "register":
		t, err := st.Client.RegisterTask(ctx, pos[0], pos[1], description)
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(io.Stdout, "task %s registered: the script of job %s\nrun it with: submit task run %s", t.Name, t.JobID, t.Name)
		for _, k := range sortedKeys(t.Inputs) {
			fmt.Fprintf(io.Stdout, " [--input %s=<%s>]", messages.QuoteName(k), messages.QuoteName(string(t.Inputs[k])))
		}
		fmt.Fprintln(io.Stdout)
	case "list":
		ts, err := st.Client.Tasks(ctx)
		if err != nil {
			return 0, err
		}
		if f.asJSON {
			if ts == nil {
				ts = []messages.Task{}
			}
			return ExitSuccess, enc.Encode(ts)
		}
		tw := tabwriter.NewWriter(io.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tJOB\tINPUTS\tOUTPUTS\tTASK")
		for _, t := range ts {
			about := t.Description
			if about == "" {
				about = t.Prompt
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", messages.QuoteName(t.Name), messages.QuoteName(t.JobID),
				typeList(t.Inputs), typeList(t.Outputs), messages.Printable(oneLine(trimRunes(about, 60))))
		}
		tw.Flush()
	case "show":
		t, err := st.Client.Task(ctx, pos[0])
		if errors.Is(err, client.ErrNoTask) {
			return 0, usagef("task %s: not registered", pos[0])
		}
		if err != nil {
			return 0, err
		}
		return ExitSuccess, enc.Encode(t)
	case "delete":
		err := st.Client.DeleteTask(ctx, pos[0])
		if errors.Is(err, client.ErrNoTask) {
			return 0, usagef("task %s: not registered", pos[0])
		}
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(io.Stdout, "task %s deleted\n", pos[0])
	}
	return ExitSuccess, nil
}

func trimRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
