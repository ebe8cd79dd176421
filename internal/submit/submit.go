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
	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/wiring"
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
	code, err := dispatch(ctx, args, cfg, io)
	if err != nil {
		var ue *usageError
		var fe *messages.FieldError
		var de *detachedError
		switch {
		case errors.As(err, &de):
			return printDetached(io.Stderr, de) // detach.go
		case errors.As(err, &ue), errors.As(err, &fe):
			fmt.Fprintln(io.Stderr, "submit: "+messages.Printable(oneLine(err.Error())))
			return ExitUsage
		case errors.Is(err, flag.ErrHelp):
			return ExitSuccess // asked for help: not an error
		default:
			fmt.Fprintln(io.Stderr, "submit: "+messages.Printable(oneLine(err.Error())))
			return ExitInfra
		}
	}
	return code
}

// command is one subcommand of the CLI.
type command struct {
	name  string // the first argument that picks it; "" for the default
	usage string // one line, after "submit "
	// action does the command. Its error decides the exit code (Run): a
	// usage or field error exits 2, flag.ErrHelp 0, any other 3.
	action func(ctx context.Context, in *invocation) (int, error)
}

// commands are the CLI's subcommands, the default first: a job from a job
// file or from flags.
func commands() []command {
	return []command{
		{"", "[--local] [--json] JOBFILE | [--local] --prompt TEXT [--sample n=path] [--input n=type] [--output n=type] [--constraint C] [--option k=v] [--context PATH]", submitCmd},
		{"status", "status JOB_ID", statusCmd},
		{"result", "result JOB_ID [--out DIR]", resultCmd},
		{"events", "events JOB_ID", eventsCmd},
		{"cancel", "cancel JOB_ID [--reason TEXT] [--json]", cancelCmd},
		{"run", "run JOB_ID [--local] [--input name=value] [--sample name=path] [--json] [--out DIR] [--resources cpu=N,memory=Q] [--timeout D] [--retries N] [--cache MODE] [--env K=V] [--secret NAME]", rerunCmd},
		{"task", usages(taskCommands(), " | "), taskCmd},
		{"codemode", codeModeUsage, codemodeCmd}, // codemode.go
		{"dlq", usages(dlqCommands(), " | "), dlqCmd},
	}
}

// invocation is one command's arguments and settings, and where it writes.
type invocation struct {
	name  string // for the flag set: "submit status"
	usage string // what -h and a usage error print after "usage: submit "
	args  []string
	cfg   config.Config
	io    IO
}

// dispatch runs the command args name, or the default one when they name none.
func dispatch(ctx context.Context, args []string, cfg config.Config, io IO) (int, error) {
	cmds := commands()
	if len(args) > 0 && args[0] == "help" { // `submit help [COMMAND]` is `submit [COMMAND] --help`
		args = append(args[1:min(len(args), 2)], "--help")
	}
	if len(args) > 0 {
		if c, ok := find(cmds, args[0]); ok {
			return c.action(ctx, &invocation{name: "submit " + c.name, usage: c.usage, args: args[1:], cfg: cfg, io: io})
		}
	}
	return cmds[0].action(ctx, &invocation{name: "submit", usage: usages(cmds, "\n       submit "), args: args, cfg: cfg, io: io})
}

// find returns the command of cmds called name; the default is never found by name.
func find(cmds []command, name string) (command, bool) {
	for _, c := range cmds {
		if c.name != "" && c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usages joins the usage lines of cmds with sep.
func usages(cmds []command, sep string) string {
	lines := make([]string, len(cmds))
	for i, c := range cmds {
		lines[i] = c.usage
	}
	return strings.Join(lines, sep)
}

// usageError is the command's usage line as an error (exit 2).
func (in *invocation) usageError() error { return usagef("usage: submit %s", in.usage) }

// positional parses the command's flags, which may come before and after
// its n positional arguments, and returns those.
func (in *invocation) positional(fs *flag.FlagSet, n int) ([]string, error) {
	pos, err := in.parse(fs) // help.go
	if err != nil {
		return nil, err
	}
	if len(pos) != n {
		return nil, in.usageError()
	}
	return pos, nil
}

// flagError is what a flag parsing error becomes: asking for help stays
// flag.ErrHelp (exit 0), anything else is a usage error (exit 2).
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usagef("%v", err)
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

// startClient starts a stack with no parts of its own, for a command that
// only talks to a deployment (or to the state a --local job left). With no
// NATS URL and no such state, there is nothing to talk to: it says so
// rather than start an empty embedded server that knows no job.
func (in *invocation) startClient(ctx context.Context) (*wiring.Stack, error) {
	if in.cfg.NATSURL == "" {
		if fi, err := os.Stat(wiring.EmbeddedStoreDir(in.cfg)); err != nil || !fi.IsDir() {
			return nil, usagef("no deployment configured: set AUTOCODER_NATS_URL (or --nats-url) to its NATS; "+
				"jobs run with --local are found with the --state-dir they ran with (%s has none)", in.cfg.StateDir)
		}
	}
	return wiring.Start(ctx, cliStack(in.cfg, in.io))
}

// connectTimeout bounds how long the CLI tries to reach a remote NATS before
// it gives up with exit 3; servers, by contrast, wait for NATS to come up.
const connectTimeout = 15 * time.Second

// cliStack is the stack wiring every submit subcommand starts from.
func cliStack(cfg config.Config, io IO) wiring.Options {
	return wiring.Options{Config: cfg, Logger: logger(cfg, io.Stderr), ConnectTimeout: connectTimeout}
}

// exitCode is a finished job's exit code (Contract 4): a job the
// coordinator refused (an invalid spec or run, a model or Python version
// the deployment does not offer) is bad input.
func exitCode(r *messages.Result) int {
	switch {
	case r.Success:
		return ExitSuccess
	case r.Status == messages.StatusErrored:
		return ExitInfra
	case strings.HasPrefix(r.Error, "invalid job spec: "):
		return ExitUsage
	}
	return ExitFailed
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
			case stringOptions[k] || strings.HasPrefix(k, "env_vars."):
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
	listOptions   = map[string]bool{"base_packages": true, "secrets": true}
	stringOptions = map[string]bool{"model": true, "cache": true, "backend": true, "resources.memory": true,
		"system_prompt": true, "system_prompt_prefix": true, "python": true}
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
// files (writeOut), its File and Dir outputs, and the samples it was
// generated from (under original-samples/), downloaded from the object
// stores, in dir. It returns the downloaded paths.
func saveOut(ctx context.Context, c *client.Client, dir string, r *messages.Result) ([]string, error) {
	if err := writeOut(dir, r); err != nil {
		return nil, err
	}
	return c.Download(ctx, r, dir)
}

// saveOutListed is saveOut that lists the downloaded outputs on Stderr.
func saveOutListed(ctx context.Context, c *client.Client, dir string, r *messages.Result, io IO) error {
	written, err := saveOut(ctx, c, dir, r)
	if err != nil {
		return err
	}
	for _, p := range written {
		fmt.Fprintf(io.Stderr, "downloaded %s\n", p)
	}
	return nil
}

// printJSON prints v as indented JSON: a result object, a task, the tasks.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
	if r.CodeMode != nil {
		printCodeModeSummary(w, r) // codemode.go
		return
	}
	status := successLine(r) // coderunner.go
	if !r.Success {
		status = "FAILED: " + messages.Printable(r.Error)
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
			fmt.Fprintf(w, "  %s = %s\n", messages.QuoteName(k), messages.Printable(string(b)))
		}
	}
	printContextUsed(w, r) // coderunner.go
	if r.Solution != nil {
		fmt.Fprintf(w, "\n# %s\n%s\n", protocol.SolutionFile, messages.Printable(strings.TrimRight(r.Solution.Code, "\n")))
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
