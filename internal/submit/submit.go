package submit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/internal/jobfile"
	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/stack"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Exit codes (Contract 4 (docs/contracts.md)).
const (
	ExitSuccess = 0 // the job passed its tests
	ExitFailed  = 1 // the job finished without passing tests
	ExitUsage   = 2 // bad usage or bad input
	ExitInfra   = 3 // infrastructure failure
)

// IO is where the CLI reads and writes.
type IO struct {
	Stdout, Stderr io.Writer
	// Terminal says Stderr is a terminal: progress is drawn live.
	Terminal bool
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// Run runs the submit CLI with args (without the program name) and returns
// its exit code. It never panics on bad input: every problem is one line on
// Stderr and an exit code.
func Run(ctx context.Context, args []string, cfg config.Config, io IO) int {
	code, err := run(ctx, args, cfg, io)
	if err != nil {
		var ue *usageError
		var fe *messages.FieldError
		switch {
		case errors.As(err, &ue), errors.As(err, &fe):
			fmt.Fprintln(io.Stderr, "submit: "+oneLine(err.Error()))
			return ExitUsage
		case errors.Is(err, flag.ErrHelp):
			return ExitUsage
		default:
			fmt.Fprintln(io.Stderr, "submit: "+oneLine(err.Error()))
			return ExitInfra
		}
	}
	return code
}

func run(ctx context.Context, args []string, cfg config.Config, io IO) (int, error) {
	if len(args) > 0 {
		switch args[0] {
		case "status", "result", "events":
			return lookup(ctx, args[0], args[1:], cfg, io)
		case "run":
			return runCmd(ctx, args[1:], cfg, io) // run.go
		case "task":
			return taskCmd(ctx, args[1:], cfg, io)
		}
	}
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	var (
		local      = fs.Bool("local", false, "run on embedded defaults: in-process NATS, coordinator and workers")
		asJSON     = fs.Bool("json", false, "print the result object (Contract 5 (docs/contracts.md)) as JSON on stdout")
		transcript = fs.String("transcript", "", "replay this scripted model transcript instead of calling a model (default: transcript.json beside the job file when no OPENAI_API_KEY is set)")
		outDir     = fs.String("out", "", "write solution.py, test_solution.py, result.json and the File and Dir outputs to this folder")
		timeout    = fs.Duration("wait", 30*time.Minute, "how long to wait for the job")
		prompt     = fs.String("prompt", "", "the task, when no job file is given")
		samples    = multi{}
		inputs     = multi{}
		outputs    = multi{}
		cons       = multi{}
		options    = multi{}
	)
	fs.Var(&samples, "sample", "name=path of a sample file (repeatable)")
	fs.Var(&inputs, "input", "name=type of an input (repeatable)")
	fs.Var(&outputs, "output", "name=type of an output (repeatable)")
	fs.Var(&cons, "constraint", "a constraint on the data (repeatable)")
	fs.Var(&options, "option", "key=value of an option, e.g. max_iterations=5 (repeatable)")
	cfg.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(io.Stderr, "usage: submit [--local] [--json] JOBFILE\n       submit [--local] --prompt TEXT [--sample n=path] [--input n=type] [--output n=type] [--constraint C] [--option k=v]\n       submit status|events JOB_ID | result JOB_ID [--out DIR]\n       submit run JOB_ID [--input n=value] [--sample n=path] [--json] [--out DIR]\n       submit task register NAME JOB_ID | task run NAME [--input n=value] ... | task list")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitSuccess, nil // asked for help: not an error
		}
		return 0, usagef("%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return 0, usagef("%v", err)
	}

	var spec *messages.JobSpec
	var jobDir string
	switch {
	case fs.NArg() == 1 && *prompt == "":
		s, err := jobfile.Load(fs.Arg(0))
		if err != nil {
			return 0, usagef("%v", err)
		}
		spec, jobDir = s, filepath.Dir(fs.Arg(0))
	case fs.NArg() == 0 && *prompt != "":
		s, err := fromFlags(*prompt, samples, inputs, outputs, cons, options)
		if err != nil {
			return 0, err
		}
		spec, jobDir = s, "."
	case fs.NArg() > 1:
		return 0, usagef("one job file at a time (got %d)", fs.NArg())
	default:
		return 0, usagef("give a job file or --prompt (see submit -h)")
	}
	if err := jobfile.CheckSamples(spec); err != nil {
		return 0, err
	}

	if !*local && cfg.NATSURL == "" {
		return 0, usagef("no NATS to join: set AUTOCODER_NATS_URL, or use --local for embedded defaults")
	}
	opts := cliStack(cfg, io)
	if *local {
		opts.Coordinator, opts.LLMWorker, opts.SandboxWorker = true, true, true
		if cfg.OpenAIAPIKey == "" && cfg.OpenAIBaseURL == "" {
			path := *transcript
			if path == "" {
				path = filepath.Join(jobDir, "transcript.json")
			}
			srv, label, err := scripted(path)
			if err != nil {
				return 0, usagef("no model: set OPENAI_API_KEY (or OPENAI_BASE_URL), or give --transcript (%v)", err)
			}
			defer srv.Close()
			fmt.Fprintf(io.Stderr, "SCRIPTED MODEL: no OPENAI_API_KEY is set, so the model's answers are replayed from %s (%s). Set OPENAI_API_KEY to use a real model.\n", path, label)
			opts.Config.OpenAIBaseURL, opts.Config.OpenAIAPIKey = srv.URL(), "scripted"
		}
	} else if *transcript != "" {
		return 0, usagef("--transcript needs --local (the workers call the model, not submit)")
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return 0, err
	}
	defer st.Close()

	jobID := client.NewJobID()
	if err := st.Client.Submit(ctx, jobID, *spec); err != nil {
		return 0, err
	}
	fmt.Fprintf(io.Stderr, "job %s submitted\n", jobID)
	p := newProgress(io)
	res, err := st.Client.Watch(ctx, jobID, p.event)
	p.done()
	if err != nil {
		return 0, fmt.Errorf("job %s: %w", jobID, err)
	}
	if *outDir != "" {
		written, err := saveOut(ctx, st.Client, *outDir, res)
		if err != nil {
			return 0, err
		}
		for _, p := range written {
			fmt.Fprintf(io.Stderr, "downloaded %s\n", p)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(io.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return 0, err
		}
	} else {
		printSummary(io.Stdout, res)
	}
	return exitCode(res), nil
}

// connectTimeout bounds how long the CLI tries to reach a remote NATS before
// it gives up with exit 3; servers, by contrast, wait for NATS to come up.
const connectTimeout = 15 * time.Second

// cliStack is the stack wiring every submit subcommand starts from.
func cliStack(cfg config.Config, io IO) stack.Options {
	return stack.Options{Config: cfg, Logger: logger(cfg, io.Stderr), ConnectTimeout: connectTimeout}
}

func exitCode(r *messages.Result) int {
	switch {
	case r.Success:
		return ExitSuccess
	case r.Status == messages.StatusErrored:
		return ExitInfra
	}
	return ExitFailed
}

func scripted(path string) (*fakellm.Server, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	t, err := fakellm.LoadTranscript(f)
	if err != nil {
		return nil, "", fmt.Errorf("transcript %s: %w", path, err)
	}
	srv := fakellm.New()
	srv.Play(t)
	return srv, t.Label, nil
}

func lookup(ctx context.Context, what string, args []string, cfg config.Config, io IO) (int, error) {
	fs := flag.NewFlagSet("submit "+what, flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	usage := "usage: submit " + what + " JOB_ID"
	var outDir string
	if what == "result" {
		fs.StringVar(&outDir, "out", "", "write solution.py, test_solution.py, result.json and the File and Dir outputs to this folder")
		usage += " [--out DIR]"
	}
	fs.Usage = func() {
		fmt.Fprintln(io.Stderr, usage)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return ExitSuccess, nil
	}
	if err != nil {
		return 0, usagef("%v", err)
	}
	if len(pos) != 1 {
		return 0, usagef("%s", usage)
	}
	opts := cliStack(cfg, io)
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	id := pos[0]
	var res *messages.Result
	switch what {
	case "events":
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		enc := json.NewEncoder(io.Stdout)
		res, err = st.Client.Watch(ctx, id, func(e messages.Event) error { return enc.Encode(e) })
		if err != nil {
			return 0, err
		}
		return exitCode(res), nil
	case "status":
		res, err = st.Client.Status(ctx, id)
	default:
		res, err = st.Client.Result(ctx, id)
	}
	if errors.Is(err, client.ErrNotFound) {
		return 0, usagef("job %s: not found (or not finished)", id)
	}
	if err != nil {
		return 0, err
	}
	if outDir != "" {
		written, err := saveOut(ctx, st.Client, outDir, res)
		if err != nil {
			return 0, err
		}
		for _, p := range written {
			fmt.Fprintf(io.Stderr, "downloaded %s\n", p)
		}
	}
	enc := json.NewEncoder(io.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return 0, err
	}
	if res.Status == messages.StatusRunning {
		return ExitSuccess, nil
	}
	return exitCode(res), nil
}

// fromFlags builds a spec from --prompt and friends.
func fromFlags(prompt string, samples, inputs, outputs, cons, options multi) (*messages.JobSpec, error) {
	raw := map[string]any{"prompt": prompt}
	kv := func(list multi, field string) (map[string]any, error) {
		m := map[string]any{}
		for _, s := range list {
			k, v, ok := strings.Cut(s, "=")
			if !ok || k == "" {
				return nil, usagef("--%s %q: want name=value", field, s)
			}
			m[k] = v
		}
		return m, nil
	}
	var err error
	for _, f := range []struct {
		list multi
		flag string
		key  string
	}{{samples, "sample", "samples"}, {inputs, "input", "inputs"}, {outputs, "output", "outputs"}} {
		if len(f.list) > 0 {
			if raw[f.key], err = kv(f.list, f.flag); err != nil {
				return nil, err
			}
		}
	}
	if len(cons) > 0 {
		raw["constraints"] = []string(cons)
	}
	if len(options) > 0 {
		o := map[string]any{}
		for _, s := range options {
			k, v, ok := strings.Cut(s, "=")
			if !ok || k == "" {
				return nil, usagef("--option %q: want name=value", s)
			}
			var val any = guessScalar(v)
			switch {
			case listOptions[k]:
				val = splitList(v) // one package is a list of one
			case stringOptions[k]:
				val = v // resources.memory=1073741824 is a quantity, not a number
			}
			// A dotted key sets a nested option: resources.memory=1Gi.
			m, path := o, strings.Split(k, ".")
			for _, p := range path[:len(path)-1] {
				sub, ok := m[p].(map[string]any)
				if !ok {
					sub = map[string]any{}
					m[p] = sub
				}
				m = sub
			}
			m[path[len(path)-1]] = val
		}
		raw["options"] = o
	}
	b, _ := json.Marshal(raw)
	return messages.DecodeJobSpecJSON(b)
}

// listOptions are the options whose value is a list, given comma separated;
// stringOptions are the ones whose value is a string even when it looks
// like a number.
var (
	listOptions   = map[string]bool{"base_packages": true}
	stringOptions = map[string]bool{"model": true, "cache": true, "backend": true, "resources.memory": true}
)

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// guessScalar reads a flag value as a number or boolean when it is one.
func guessScalar(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return b
	}
	if strings.Contains(s, ",") && !strings.ContainsAny(s, " ") {
		return strings.Split(s, ",")
	}
	return s
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func logger(cfg config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	if lvl < slog.LevelWarn {
		lvl = slog.LevelWarn // the CLI shows progress; logs only for trouble
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// saveOut is --out (of submit, submit result and submit run): the job's
// files (writeOut) and its File and Dir outputs, downloaded from the
// outputs object store, in dir. It returns the outputs' paths.
func saveOut(ctx context.Context, c *client.Client, dir string, r *messages.Result) ([]string, error) {
	if err := writeOut(dir, r); err != nil {
		return nil, err
	}
	return c.DownloadOutputs(ctx, r, dir)
}

func writeOut(dir string, r *messages.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if r.Solution != nil {
		if err := os.WriteFile(filepath.Join(dir, protocol.SolutionFile), []byte(r.Solution.Code), 0o644); err != nil {
			return err
		}
	}
	if r.Tests != "" {
		if err := os.WriteFile(filepath.Join(dir, protocol.TestFile), []byte(r.Tests), 0o644); err != nil {
			return err
		}
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	return os.WriteFile(filepath.Join(dir, "result.json"), append(b, '\n'), 0o644)
}

func printSummary(w io.Writer, r *messages.Result) {
	status := "SUCCESS: the generated script passed its tests"
	if !r.Success {
		status = "FAILED: " + r.Error
	}
	fmt.Fprintf(w, "%s\njob %s: %d attempt(s), %d LLM call(s), %d cache hit(s), %d+%d tokens\n",
		status, r.JobID, r.Attempts, r.LLMCalls, r.CacheHits, r.TotalInputTokens, r.TotalOutputTokens)
	if len(r.Outputs) > 0 {
		fmt.Fprintln(w, "outputs:")
		keys := make([]string, 0, len(r.Outputs))
		for k := range r.Outputs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b, _ := json.Marshal(r.Outputs[k])
			fmt.Fprintf(w, "  %s = %s\n", k, b)
		}
	}
	if r.Solution != nil {
		fmt.Fprintf(w, "\n# %s\n%s\n", protocol.SolutionFile, strings.TrimRight(r.Solution.Code, "\n"))
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
