package submit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/docsearch"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/jobfile"
	"github.com/autocoder/autocoder/internal/wiring"
	"github.com/autocoder/autocoder/pkg/messages"
)

// jobFlags are the flags of the default command.
type jobFlags struct {
	local      bool
	format     outputFormat
	transcript string
	outDir     string
	wait       time.Duration
	prompt     string
	samples    multi
	context    multi
	inputs     multi
	outputs    multi
	cons       multi
	options    multi
	// allowOutside lets sample and context paths leave the job file's
	// folder (or, with --prompt, the current folder).
	allowOutside bool
}

// allowOutsideHelp is the --allow-outside flag's help, for every command
// that takes local sample paths.
const allowOutsideHelp = "allow sample and context paths outside the job file's folder (the current folder with --prompt or submit run): absolute paths, .. and symbolic links. Without it they are refused, so that a job file cannot upload /etc/shadow"

func (f *jobFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.local, "local", false, "run on embedded defaults: in-process NATS, coordinator and workers")
	registerOutput(fs, &f.format, "the result object (Contract 5 (docs/contracts.md))")
	fs.StringVar(&f.transcript, "transcript", "", "replay this scripted model transcript instead of calling a model (default: transcript.json beside the job file when no OPENAI_API_KEY is set)")
	fs.StringVar(&f.outDir, "out", "", "write solution.py, test_solution.py, result.json and the File and Dir outputs to this folder")
	fs.DurationVar(&f.wait, "wait", 30*time.Minute, "how long to follow the job; then (or with 0, at once) print its id and leave it running")
	fs.StringVar(&f.prompt, "prompt", "", "the task, when no job file is given")
	fs.Var(&f.samples, "sample", "name=path of a sample file (repeatable), inside the current folder")
	fs.BoolVar(&f.allowOutside, "allow-outside", false, allowOutsideHelp)
	fs.Var(&f.context, "context", "a documentation file or folder for the model: Markdown, text or HTML (repeatable)")
	fs.Var(&f.inputs, "input", "name=type of an input (repeatable)")
	fs.Var(&f.outputs, "output", "name=type of an output (repeatable)")
	fs.Var(&f.cons, "constraint", "a constraint on the data (repeatable)")
	fs.Var(&f.options, "option", "key=value of an option, e.g. max_iterations=5, over the job file's (repeatable)")
}

// submitCmd is the default command: a job from a job file, or from --prompt
// and friends, submitted, watched to its end and reported. Everything that
// can be checked is checked before anything starts.
func submitCmd(ctx context.Context, in *invocation) (int, error) {
	var f jobFlags
	fs := in.flagSet()
	f.register(fs)
	in.cfg.Register(fs)
	args, err := in.parse(fs) // flags before and after the job file
	if err != nil {
		return 0, err
	}
	if err := in.cfg.Validate(); err != nil {
		return 0, usagef("%v", err)
	}
	spec, jobDir, err := f.spec(args, in.io.Stdin)
	if err != nil {
		return 0, err
	}
	return f.submitAndFollow(ctx, in, *spec, jobDir, func(ctx context.Context, c *client.Client, res *messages.Result) (int, error) {
		if err := f.report(ctx, c, res, in.io); err != nil {
			return 0, err
		}
		return exitCode(res), nil
	})
}

// submitAndFollow starts the stack the flags name, submits spec, follows
// it with progress lines to its result and hands that to then, with the
// stack still open. A wait cut short (Ctrl-C, --wait) says the job goes
// on and how to follow or cancel it (detached).
func (f *jobFlags) submitAndFollow(ctx context.Context, in *invocation, spec messages.JobSpec, jobDir string,
	then func(ctx context.Context, c *client.Client, res *messages.Result) (int, error)) (int, error) {
	if f.local && f.wait <= 0 {
		return 0, usagef("--wait %v with --local: the job runs inside this command, so it cannot be left running", f.wait)
	}
	if f.outDir != "" && f.wait <= 0 {
		return 0, usagef("--out with --wait %v: a job left running has nothing to write yet; `submit result JOB_ID --out DIR` writes it once it ends", f.wait)
	}
	opts, stopModel, err := f.stackOptions(in.cfg, in.io, jobDir)
	if err != nil {
		return 0, err
	}
	defer stopModel()
	st, err := wiring.Start(ctx, opts) // bounded by the connect timeout, not by --wait
	if err != nil {
		return 0, err
	}
	defer st.Close()
	jobID := client.NewJobID()
	if err := st.Client.Submit(ctx, jobID, spec); err != nil {
		return 0, err
	}
	fmt.Fprintf(in.io.Stderr, "job %s submitted\n", jobID)
	res, err := follow(ctx, st.Client, jobID, in.io, f.wait, f.local, f.format)
	if errors.Is(err, errLeftRunning) {
		return ExitSuccess, nil
	}
	if err != nil {
		return 0, err
	}
	return then(ctx, st.Client, res)
}

// spec is the job the positional arguments and flags give, with its sample
// files checked; jobDir is where a job file's transcript.json would be.
func (f *jobFlags) spec(args []string, stdin io.Reader) (spec *messages.JobSpec, jobDir string, err error) {
	switch {
	case len(args) == 1 && f.prompt == "":
		if args[0] == "-" { // the job on stdin: its paths are the working directory's
			spec, err = loadStdin(stdin, f.allowOutside)
		} else {
			spec, err = jobfile.Load(args[0], jobfile.LoadOptions{AllowOutside: f.allowOutside})
		}
		if err != nil {
			return nil, "", usagef("%v", err)
		}
		if spec, err = f.overJobFile(spec); err != nil {
			return nil, "", err
		}
		jobDir = filepath.Dir(args[0])
	case len(args) == 0 && f.prompt != "":
		if spec, err = fromFlags(f.prompt, f.samples, f.inputs, f.outputs, f.cons, f.options); err != nil {
			return nil, "", err
		}
		jobDir = "."
	case len(args) > 1:
		return nil, "", usagef("one job file at a time (got %d)", len(args))
	default:
		return nil, "", usagef("give a job file or --prompt (see submit -h)")
	}
	flagged := &messages.JobSpec{Context: f.context} // --context paths: from the current folder
	if len(args) == 0 {
		flagged.Samples = spec.Samples // --sample paths, likewise
	}
	if err := (jobfile.LocalFiles{Dir: ".", AllowOutside: f.allowOutside}).Resolve(flagged); err != nil {
		return nil, "", usagef("%v", err)
	}
	if len(flagged.Context) > 0 {
		spec.Context = append(spec.Context, flagged.Context...)
		// The job was validated before the flags' entries joined it: again,
		// so that they count towards messages.MaxContextEntries.
		if err := spec.Validate(); err != nil {
			return nil, "", usagef("%v", err)
		}
	}
	// The local files are read before anything connects; object references
	// (a spec reused from a result) name bundles uploaded already.
	var local []string
	for _, c := range spec.Context {
		if _, isRef := messages.ParseObjectRef(c); !isRef {
			local = append(local, c)
		}
	}
	if len(local) > 0 {
		if _, err := docsearch.Load(local); err != nil {
			return nil, "", usagef("%v", err)
		}
	}
	return spec, jobDir, nil
}

// stackOptions is where the job runs: on a running deployment, or with
// --local on the whole stack in this process, with a scripted model when
// --transcript is given or no model is configured. stopModel stops that
// model's server and closes its cache.
func (f *jobFlags) stackOptions(cfg config.Config, io IO, jobDir string) (_ wiring.Options, stopModel func(), _ error) {
	opts := cliStack(cfg, io)
	stopModel = func() {}
	switch {
	case !f.local && cfg.NATSURL == "":
		return opts, stopModel, usagef("no NATS to join: set AUTOCODER_NATS_URL, or use --local for embedded defaults")
	case !f.local && f.transcript != "":
		return opts, stopModel, usagef("--transcript needs --local (the workers call the model, not submit)")
	case !f.local:
		return opts, stopModel, nil
	}
	onEmbedded(&opts, wiring.RoleLocal)
	if f.transcript == "" && (cfg.OpenAIAPIKey != "" || cfg.OpenAIBaseURL != "") {
		return opts, stopModel, nil // a given --transcript wins over a configured model
	}
	srv, err := f.scriptedModel(io, jobDir)
	if err != nil {
		return opts, stopModel, err
	}
	c, err := wiring.OpenScriptedCache(context.Background(), opts.Config, opts.Logger, nil)
	if err != nil {
		srv.Close()
		return opts, stopModel, err
	}
	opts.Config.OpenAIBaseURL, opts.Config.OpenAIAPIKey = srv.URL(), "scripted"
	opts.Cache = c
	return opts, func() { _ = c.Close(); srv.Close() }, nil
}

// scriptedModel serves the --transcript (or the job's transcript.json) as
// the model, and says so loudly.
func (f *jobFlags) scriptedModel(io IO, jobDir string) (*fakellm.Server, error) {
	path := f.transcript
	if path == "" {
		path = filepath.Join(jobDir, "transcript.json")
	}
	srv, label, err := fakellm.ReplayFile(path)
	if err != nil {
		return nil, usagef("no model: set OPENAI_API_KEY (or OPENAI_BASE_URL), or give --transcript (%v)", err)
	}
	why := "no OPENAI_API_KEY is set, so"
	if f.transcript != "" {
		why = "--transcript is given:"
	}
	fmt.Fprintf(io.Stderr, "SCRIPTED MODEL: %s the model's answers are replayed from %s (%s). Set OPENAI_API_KEY to use a real model.\n", why, path, label)
	return srv, nil
}

// report saves the job's files with --out, then prints the result object
// (--json) or a summary.
func (f *jobFlags) report(ctx context.Context, c *client.Client, res *messages.Result, io IO) error {
	if f.outDir != "" {
		if err := saveOutListed(ctx, c, f.outDir, res, io); err != nil {
			return err
		}
	}
	if f.format != formatHuman {
		return printAs(io.Stdout, f.format, res)
	}
	printSummary(io.Stdout, res)
	return nil
}

// errLeftRunning is a job left running as --wait asked: its id is printed,
// and the command exits 0.
var errLeftRunning = errors.New("left running")

// follow watches job id, just submitted, for at most wait. With wait 0,
// or when wait runs out, the job is left running (not with --local: it
// runs inside this command): its id goes on stdout (in format: a result
// object of a running job, for a program that reads JSON or YAML), how to
// get back to it on stderr, and the error is errLeftRunning. Ctrl-C is a
// detachedError.
func follow(ctx context.Context, c *client.Client, id string, io IO, wait time.Duration, local bool, format outputFormat) (*messages.Result, error) {
	leftRunning := func() (*messages.Result, error) {
		if format == formatHuman {
			fmt.Fprintln(io.Stdout, id)
		} else if err := printAs(io.Stdout, format, messages.Result{V: messages.WireVersion, JobID: id, Status: messages.StatusRunning}); err != nil {
			return nil, err
		}
		return nil, errLeftRunning
	}
	if wait <= 0 && !local {
		return leftRunning()
	}
	waitCtx, cancel := context.WithTimeout(ctx, max(wait, 0))
	defer cancel()
	res, err := watch(waitCtx, c, id, io)
	if err != nil && !local && ctx.Err() == nil && errors.Is(waitCtx.Err(), context.DeadlineExceeded) {
		printFollowHints(io.Stderr, fmt.Sprintf("job %s is still running after --wait %v; it goes on", id, wait), id)
		return leftRunning()
	}
	if err != nil {
		return nil, detached(waitCtx, fmt.Errorf("job %s: %w", id, err), id, local)
	}
	return res, nil
}

// watch follows job id to its end, drawing its progress on Stderr.
func watch(ctx context.Context, c *client.Client, id string, io IO) (*messages.Result, error) {
	p := newProgress(io)
	res, err := c.Watch(ctx, id, p.event)
	p.done()
	return res, err
}

// overJobFile lays the flags given with a job file over it: --option
// values over its options, checked as the file's own are (an error names
// the field); --sample, --input, --output and --constraint, which only
// build a job from --prompt, are refused rather than ignored.
func (f *jobFlags) overJobFile(spec *messages.JobSpec) (*messages.JobSpec, error) {
	for _, g := range []struct {
		name string
		list multi
	}{{"sample", f.samples}, {"input", f.inputs}, {"output", f.outputs}, {"constraint", f.cons}} {
		if len(g.list) > 0 {
			return nil, usagef("--%s builds a job with --prompt; with a job file, write it in the file", g.name)
		}
	}
	if len(f.options) == 0 {
		return spec, nil
	}
	over, err := optionsMap(f.options)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	opts, _ := raw["options"].(map[string]any)
	if opts == nil {
		opts = map[string]any{}
	}
	mergeInto(opts, over)
	raw["options"] = opts
	b, _ = json.Marshal(raw)
	return messages.DecodeJobSpecJSON(b)
}

// mergeInto sets every value of over in dst, nested maps merged key by key.
func mergeInto(dst, over map[string]any) {
	for k, v := range over {
		sub, ok := v.(map[string]any)
		if d, isMap := dst[k].(map[string]any); ok && isMap {
			mergeInto(d, sub)
			continue
		}
		dst[k] = v
	}
}

// loadStdin reads a job file from stdin (`submit -`), bounded as a job
// file is; its sample and context paths are relative to the working
// directory.
func loadStdin(stdin io.Reader, allowOutside bool) (*messages.JobSpec, error) {
	if stdin == nil {
		return nil, errors.New("job file -: no standard input")
	}
	data, err := io.ReadAll(io.LimitReader(stdin, jobfile.MaxSpecBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("job file -: %w", err)
	case len(data) > jobfile.MaxSpecBytes:
		return nil, fmt.Errorf("job file -: over %d bytes", jobfile.MaxSpecBytes)
	}
	spec, err := jobfile.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("job file -: %w", err)
	}
	if err := (jobfile.LocalFiles{Dir: ".", AllowOutside: allowOutside}).Resolve(spec); err != nil {
		return nil, fmt.Errorf("job file -: %w", err)
	}
	return spec, nil
}
