package submit

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/jobfile"
	"github.com/autocoder/autocoder/pkg/messages"
)

const codeModeUsage = `codemode [--local] [--json] MESSAGE --tool NAME|ALIAS=NAME ... [--skill TEXT] [--skill-file PATH] [--max-turns N | --max-retries N] [--system-prompt-prefix TEXT] [--interpreter python|starlark] | codemode tools --tool NAME|ALIAS=NAME ...`

// codeModeFlags are the flags of submit codemode.
type codeModeFlags struct {
	job         jobFlags // --local, --json, --transcript, --wait
	tools       multi
	skills      multi
	skillFiles  multi
	maxTurns    int
	maxRetries  *int // nil: not given (the default)
	prefix      string
	interpreter string
}

func (f *codeModeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.job.local, "local", false, "run on embedded defaults: in-process NATS, coordinator and workers (tools must be served on that NATS)")
	fs.BoolVar(&f.job.asJSON, "json", false, "print the result object as JSON on stdout")
	fs.StringVar(&f.job.transcript, "transcript", "", "with --local: replay this scripted model transcript instead of calling a model")
	fs.DurationVar(&f.job.wait, "wait", 30*time.Minute, "how long to wait for the job")
	fs.Var(&f.tools, "tool", "name of a tool served on NATS, or alias=served_name to show it to the program as alias (repeatable)")
	fs.Var(&f.skills, "skill", "a skill's text for the prompt (repeatable)")
	fs.Var(&f.skillFiles, "skill-file", "a file whose text is a skill (repeatable)")
	fs.IntVar(&f.maxTurns, "max-turns", 0, "multi-turn: at most this many replies with code before an answer")
	fs.Func("max-retries", "single-shot: programs written again on an error; 0: none (default 3)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		f.maxRetries = &n
		return nil
	})
	fs.StringVar(&f.prefix, "system-prompt-prefix", "", "text put first in the system prompt")
	fs.StringVar(&f.interpreter, "interpreter", "", "what runs the programs: python (default) or starlark")
}

// maxSkillFileBytes bounds a --skill-file: it goes into every prompt.
const maxSkillFileBytes = 256 << 10

// codemodeCmd submits a mode: codemode job, watches it and reports its
// answer: the message is the positional argument, anywhere among the flags.
func codemodeCmd(ctx context.Context, in *invocation) (int, error) {
	if len(in.args) > 0 && in.args[0] == "tools" {
		in.args = in.args[1:]
		return codeModeToolsCmd(ctx, in)
	}
	var f codeModeFlags
	fs := in.flagSet()
	f.register(fs)
	in.cfg.Register(fs)
	positional, err := parseInterleaved(fs, in.args)
	if err != nil {
		return 0, flagError(err)
	}
	if err := in.cfg.Validate(); err != nil {
		return 0, usagef("%v", err)
	}
	spec, err := f.spec(positional)
	if err != nil {
		return 0, err
	}
	return f.job.submitAndFollow(ctx, in, *spec, ".", func(_ context.Context, _ *client.Client, res *messages.Result) (int, error) {
		if f.job.asJSON {
			return exitCode(res), printJSON(in.io.Stdout, res)
		}
		printCodeModeSummary(in.io.Stdout, res)
		return exitCode(res), nil
	})
}

// spec builds and validates the job.
func (f *codeModeFlags) spec(positional []string) (*messages.JobSpec, error) {
	if len(positional) != 1 {
		return nil, usagef("give the message as one argument (got %d); usage: submit %s", len(positional), codeModeUsage)
	}
	skills := append([]string(nil), f.skills...)
	for _, path := range f.skillFiles {
		b, err := jobfile.ReadRegular(path, maxSkillFileBytes)
		if err != nil {
			return nil, usagef("--skill-file %s: %v", path, err)
		}
		skills = append(skills, string(b))
	}
	spec := &messages.JobSpec{Mode: messages.ModeCodeMode,
		CodeModeSpec: messages.CodeModeSpec{Message: positional[0], Tools: f.tools, Skills: skills,
			MaxTurns: f.maxTurns, MaxRetries: f.maxRetries, SystemPromptPrefix: f.prefix,
			Interpreter: messages.Interpreter(f.interpreter)}}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return spec, nil
}

// printCodeModeSummary prints a code-mode job's answer, value and code.
func printCodeModeSummary(w io.Writer, r *messages.Result) {
	status := "ANSWERED"
	if !r.Success {
		status = "FAILED: " + messages.Printable(r.Error)
	}
	fmt.Fprintf(w, "%s\njob %s: %d LLM call(s), %d cache hit(s), %d+%d tokens\n",
		status, r.JobID, r.LLMCalls, r.CacheHits, r.TotalInputTokens, r.TotalOutputTokens)
	cm := r.CodeMode
	if cm == nil {
		return
	}
	fmt.Fprintf(w, "turns: %d\n", cm.Turns)
	if cm.Summary != "" {
		fmt.Fprintf(w, "answer: %s\n", messages.Printable(cm.Summary))
	}
	fmt.Fprintf(w, "value: %s\n", messages.Printable(string(cm.Value)))
	if cm.Code != "" {
		fmt.Fprintf(w, "\n# program\n%s\n", messages.Printable(strings.TrimRight(cm.Code, "\n")))
	}
}

// codeModeToolsCmd is `submit codemode tools --tool NAME ...`: the tools'
// descriptions as a code-mode job's model sees them (the JSON its system
// prompt shows), discovered over NATS as the job would.
func codeModeToolsCmd(ctx context.Context, in *invocation) (int, error) {
	var tools multi
	fs := in.flagSet()
	fs.Var(&tools, "tool", "name of a tool served on NATS, or alias=served_name (repeatable)")
	in.cfg.Register(fs)
	if _, err := in.positional(fs, 0); err != nil {
		return 0, err
	}
	if len(tools) == 0 {
		return 0, usagef("give the tools with --tool NAME (repeatable)")
	}
	for _, t := range tools {
		if _, err := messages.ParseToolRef(t); err != nil {
			return 0, usagef("--tool: %v", err)
		}
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		desc, err := c.CodeModeTools(ctx, tools)
		if err != nil {
			return 0, err
		}
		var v any
		if err := json.Unmarshal(desc, &v); err != nil {
			return 0, err
		}
		return ExitSuccess, printJSON(in.io.Stdout, v)
	})
}
