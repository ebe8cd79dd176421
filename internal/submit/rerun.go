package submit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/jobfile"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// rerunFlags are the flags of `submit run` and `submit task run`.
type rerunFlags struct {
	local   bool
	asJSON  bool
	outDir  string
	wait    time.Duration
	inputs  multi
	samples multi
	run     runOptionFlags
	// allowOutside lets --sample and File or Dir --input paths leave the
	// current folder and follow symbolic links.
	allowOutside bool
}

func (f *rerunFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.local, "local", false, "run on embedded defaults: in-process NATS, coordinator and sandbox worker")
	fs.BoolVar(&f.asJSON, "json", false, "print the run's result object (Contract 5 (docs/contracts.md)) as JSON on stdout")
	fs.StringVar(&f.outDir, "out", "", "write result.json and the File and Dir outputs to this folder")
	fs.DurationVar(&f.wait, "wait", 30*time.Minute, "how long to follow the run; then (or with 0, at once) print its id and leave it running")
	fs.Var(&f.inputs, "input", "name=value of an input (repeatable); a File or Dir input's value is a local path, inside the current folder")
	fs.Var(&f.samples, "sample", "name=path of a new sample file in place of the job's (repeatable), inside the current folder")
	fs.BoolVar(&f.allowOutside, "allow-outside", false, allowOutsideHelp)
	f.run.register(fs)
}

// rerunCmd is `submit run JOB_ID [flags]`: the job's generated script on new
// data, with typed outputs back.
func rerunCmd(ctx context.Context, in *invocation) (int, error) {
	jobID, f, err := in.rerunArgs()
	if err != nil {
		return 0, err
	}
	if err := checkJobID(jobID); err != nil {
		return 0, err
	}
	return rerun(ctx, jobID, "", f, in.cfg, in.io)
}

// rerunArgs parses the flags of `submit run` and `submit task run` and
// their one positional argument (a job id or a task name).
func (in *invocation) rerunArgs() (string, rerunFlags, error) {
	fs := in.flagSet()
	var f rerunFlags
	f.register(fs)
	in.cfg.Register(fs)
	pos, err := in.positional(fs, 1)
	if err != nil {
		return "", f, err
	}
	return pos[0], f, nil
}

// rerun runs the script of job from (of task, when named) on new data and
// reports like a job: exit 0 when the script ran and every output parsed,
// 1 when it did not, 2 for bad input, 3 for infrastructure.
func rerun(ctx context.Context, from, task string, f rerunFlags, cfg config.Config, io IO) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, usagef("%v", err)
	}
	if f.local && f.wait <= 0 {
		return 0, usagef("--wait %v with --local: the run happens inside this command, so it cannot be left running", f.wait)
	}
	if f.outDir != "" && f.wait <= 0 {
		return 0, usagef("--out with --wait %v: a run left running has nothing to write yet; `submit result JOB_ID --out DIR` writes it once it ends", f.wait)
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
	local := jobfile.LocalFiles{Dir: ".", AllowOutside: f.allowOutside}
	for name, p := range samples {
		if samples[name], err = local.Sample(p); err != nil {
			return 0, usagef("--sample %s: %v", name, err)
		}
	}
	opts, err := f.run.runOptions()
	if err != nil {
		return 0, err
	}
	st, err := wiring.Start(ctx, f.stackOptions(cfg, io)) // bounded by the connect timeout, not by --wait
	if err != nil {
		return 0, err
	}
	defer st.Close()
	from, src, defaults, err := scriptSource(ctx, st.Client, from, task)
	if err != nil {
		return 0, err
	}
	req, files, err := rerunRequest(from, src.Spec, inputs, samples, local)
	if err != nil {
		return 0, err
	}
	req.Options = opts.Over(defaults)
	res, err := submitRerun(ctx, st.Client, from, req, files, io, f)
	if errors.Is(err, errLeftRunning) {
		return ExitSuccess, nil
	}
	if err != nil {
		return 0, err
	}
	if err := f.report(ctx, st.Client, from, res, io); err != nil {
		return 0, err
	}
	return exitCode(res), nil // ExitUsage when the coordinator found the request bad
}

// stackOptions is where the rerun runs: on a running deployment, or with
// --local in this process. A rerun calls no model: a coordinator and a
// sandbox worker are all it needs.
func (f *rerunFlags) stackOptions(cfg config.Config, io IO) wiring.Options {
	opts := cliStack(cfg, io)
	if f.local {
		onEmbedded(&opts, wiring.RoleCoordinator, wiring.RoleSandboxWorker)
	}
	return opts
}

// onEmbedded makes opts run roles on the embedded NATS of the state dir,
// whatever AUTOCODER_NATS_URL (or a profile) says: --local never joins a
// deployment, where its workers would answer the fleet's stages.
func onEmbedded(opts *wiring.Options, roles ...wiring.Role) {
	opts.Config.NATSURL = ""
	opts.Roles = roles
}

// scriptSource is the finished, successful job whose script a rerun runs:
// job from, or the job of task when one is named, with the task's
// defaults.
func scriptSource(ctx context.Context, c *client.Client, from, task string) (string, *messages.Result, *messages.RunOptions, error) {
	var defaults *messages.RunOptions
	if task != "" {
		t, err := c.Task(ctx, task)
		if errors.Is(err, client.ErrNoTask) {
			return "", nil, nil, usagef("task %s: not registered (see submit task list)", task)
		}
		if err != nil {
			return "", nil, nil, err
		}
		from, defaults = t.JobID, t.Defaults
	}
	src, err := c.Result(ctx, from)
	if errors.Is(err, client.ErrNotFound) {
		return "", nil, nil, usagef("job %s: not found (or not finished)", from)
	}
	if err != nil {
		return "", nil, nil, err
	}
	if !src.Success || src.Spec == nil || src.Solution == nil {
		return "", nil, nil, usagef("job %s did not succeed, so it has no tested script to run", from)
	}
	return from, src, defaults, nil
}

// submitRerun submits the rerun of job from's script and watches it to its end.
func submitRerun(ctx context.Context, c *client.Client, from string, req messages.RunRequest, files map[string]string, io IO, f rerunFlags) (*messages.Result, error) {
	id := client.NewJobID()
	if err := c.Run(ctx, id, req, files); err != nil {
		return nil, err
	}
	fmt.Fprintf(io.Stderr, "run %s of job %s submitted\n", id, from)
	format := formatHuman
	if f.asJSON {
		format = formatJSON
	}
	return follow(ctx, c, id, io, f.wait, f.local, format) // job.go
}

// report saves the outputs with --out, then prints the result object
// (--json) or the outputs.
func (f *rerunFlags) report(ctx context.Context, c *client.Client, from string, res *messages.Result, io IO) error {
	var downloaded []string
	if f.outDir != "" {
		var err error
		if downloaded, err = saveOut(ctx, c, f.outDir, res); err != nil {
			return err
		}
	}
	if f.asJSON {
		return printJSON(io.Stdout, res)
	}
	printRerun(io.Stdout, from, res, downloaded)
	return nil
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

// rerunRequest checks inputs and samples against the job's spec, strictly,
// and returns the request and the local files to upload. A File or Dir
// input's path is resolved under local, as a --sample path is (samples
// come already resolved): a symbolic link is refused, or with
// --allow-outside replaced by its target, so that a linked folder is
// uploaded with its files, not as an empty archive.
func rerunRequest(from string, spec *messages.JobSpec, inputs, samples map[string]string, local jobfile.LocalFiles) (messages.RunRequest, map[string]string, error) {
	req := messages.RunRequest{FromJob: from, Args: map[string]string{}}
	files := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		v := inputs[name]
		t, ok := spec.Inputs[name]
		if !ok {
			return req, nil, usagef("--input %s: job %s has no such input (inputs: %s)", name, from, typeList(spec.Inputs))
		}
		switch t {
		case messages.TypeFile, messages.TypeDir:
			resolve := local.Sample
			if t == messages.TypeDir {
				resolve = local.Folder
			}
			p, err := resolve(v)
			if err != nil {
				return req, nil, usagef("--input %s (%s): %v", name, t, err)
			}
			files[name] = p
		default:
			canon, err := messages.ParseInputValue(t, v)
			if err != nil {
				return req, nil, usagef("--input %s (%s): %v", name, t, err)
			}
			req.Args[name] = canon
		}
	}
	for _, name := range slices.Sorted(maps.Keys(samples)) {
		if _, ok := spec.Samples[name]; !ok {
			return req, nil, usagef("--sample %s: job %s has no such sample (samples: %s)", name, from, strings.Join(slices.Sorted(maps.Keys(spec.Samples)), ", "))
		}
		if err := checkPath(samples[name]); err != nil {
			return req, nil, usagef("--sample %s: %v", name, err)
		}
		files[name] = samples[name]
	}
	if len(req.Args) == 0 {
		req.Args = nil
	}
	return req, files, nil
}

// checkPath checks that a sample path resolved at the start (LocalFiles)
// is still a regular file.
func checkPath(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	}
	return nil
}

func typeList(m map[string]messages.Type) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, messages.QuoteName(k)+" ("+messages.QuoteName(string(m[k]))+")")
	}
	return strings.Join(out, ", ")
}

func printRerun(w io.Writer, from string, r *messages.Result, downloaded []string) {
	if r.Success {
		fmt.Fprintf(w, "SUCCESS: the script of job %s ran and wrote every output\n", from)
	} else {
		fmt.Fprintf(w, "FAILED: %s\n", messages.Printable(r.Error))
	}
	fmt.Fprintf(w, "run %s\n", r.JobID)
	if len(r.Outputs) > 0 {
		fmt.Fprintln(w, "outputs:")
		for _, k := range slices.Sorted(maps.Keys(r.Outputs)) {
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

func trimRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
