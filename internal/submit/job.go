package submit

import (
	"context"
	"flag"
	"fmt"
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
	asJSON     bool
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
}

func (f *jobFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.local, "local", false, "run on embedded defaults: in-process NATS, coordinator and workers")
	fs.BoolVar(&f.asJSON, "json", false, "print the result object (Contract 5 (docs/contracts.md)) as JSON on stdout")
	fs.StringVar(&f.transcript, "transcript", "", "replay this scripted model transcript instead of calling a model (default: transcript.json beside the job file when no OPENAI_API_KEY is set)")
	fs.StringVar(&f.outDir, "out", "", "write solution.py, test_solution.py, result.json and the File and Dir outputs to this folder")
	fs.DurationVar(&f.wait, "wait", 30*time.Minute, "how long to wait for the job")
	fs.StringVar(&f.prompt, "prompt", "", "the task, when no job file is given")
	fs.Var(&f.samples, "sample", "name=path of a sample file (repeatable)")
	fs.Var(&f.context, "context", "a documentation file or folder for the model: Markdown, text or HTML (repeatable)")
	fs.Var(&f.inputs, "input", "name=type of an input (repeatable)")
	fs.Var(&f.outputs, "output", "name=type of an output (repeatable)")
	fs.Var(&f.cons, "constraint", "a constraint on the data (repeatable)")
	fs.Var(&f.options, "option", "key=value of an option, e.g. max_iterations=5 (repeatable)")
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
	spec, jobDir, err := f.spec(args)
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
	opts, stopModel, err := f.stackOptions(in.cfg, in.io, jobDir)
	if err != nil {
		return 0, err
	}
	defer stopModel()
	ctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	st, err := wiring.Start(ctx, opts)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	jobID := client.NewJobID()
	if err := st.Client.Submit(ctx, jobID, spec); err != nil {
		return 0, err
	}
	fmt.Fprintf(in.io.Stderr, "job %s submitted\n", jobID)
	res, err := watch(ctx, st.Client, jobID, in.io)
	if err != nil {
		return 0, detached(ctx, fmt.Errorf("job %s: %w", jobID, err), jobID, f.local)
	}
	return then(ctx, st.Client, res)
}

// spec is the job the positional arguments and flags give, with its sample
// files checked; jobDir is where a job file's transcript.json would be.
func (f *jobFlags) spec(args []string) (spec *messages.JobSpec, jobDir string, err error) {
	switch {
	case len(args) == 1 && f.prompt == "":
		if spec, err = jobfile.Load(args[0]); err != nil {
			return nil, "", usagef("%v", err)
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
	if err := jobfile.CheckSamples(spec); err != nil {
		return nil, "", err
	}
	spec.Context = append(spec.Context, f.context...)
	if len(spec.Context) > 0 {
		if _, err := docsearch.Load(spec.Context); err != nil { // checked before anything connects
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
	opts.Roles = []wiring.Role{wiring.RoleLocal}
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
	if f.asJSON {
		return printJSON(io.Stdout, res)
	}
	printSummary(io.Stdout, res)
	return nil
}

// watch follows job id to its end, drawing its progress on Stderr.
func watch(ctx context.Context, c *client.Client, id string, io IO) (*messages.Result, error) {
	p := newProgress(io)
	res, err := c.Watch(ctx, id, p.event)
	p.done()
	return res, err
}
