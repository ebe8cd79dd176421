package evaluate

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/fakellm"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Config is one evaluation. The zero value of each field is its default.
type Config struct {
	// Problems is the problem set (JSONL); "": HumanEval at
	// problemset.DefaultPath of the working directory.
	Problems string
	// Out is the directory of results.jsonl, results.csv and results.md;
	// "": eval-out. A results.jsonl already there is resumed.
	Out string
	// Fake answers with the project's fake model instead of a real one:
	// "canonical" or "plausible-wrong" (fakellm.HumanEvalMode); "": the
	// configured model (Stack's OpenAI settings and --model).
	Fake string
	// Parallel is how many problems run at once; zero: 2.
	Parallel int
	// Every takes every Nth problem of the set (zero: 1, all); Limit stops
	// after that many (zero: no limit). Tasks, if any, keeps only these
	// task IDs.
	Every, Limit int
	Tasks        []string
	// MaxIterations is each job's options.max_iterations; zero: 5.
	MaxIterations int
	// Options are more job options, as key=value (value as JSON, else a
	// string): e.g. cache=override for fresh model calls.
	Options []string
	// PriceIn and PriceOut are the model's prices in US dollars per million
	// input and output tokens, for the cost columns; zero: cost is zero.
	PriceIn, PriceOut float64
	// ProblemTimeout bounds one problem's job, which is cancelled past it
	// (a failure with no script); zero: 20 minutes.
	ProblemTimeout time.Duration
	// Progress draws a progress bar (on a terminal); otherwise a line per
	// problem.
	Progress bool
	// Stack is where the jobs run: embedded (the default) or a NATS to
	// join (Stack.NATSURL), with its sandbox and model settings.
	Stack config.Config
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.Out == "" {
		c.Out = "eval-out"
	}
	if c.Parallel == 0 {
		c.Parallel = 2
	}
	if c.Every == 0 {
		c.Every = 1
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = 5
	}
	if c.ProblemTimeout == 0 {
		c.ProblemTimeout = 20 * time.Minute
	}
	return c
}

// maxParallel bounds Config.Parallel.
const maxParallel = 64

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	switch {
	case c.Parallel < 0 || c.Parallel > maxParallel:
		return fmt.Errorf("--parallel %d: want 1 to %d", c.Parallel, maxParallel)
	case c.Every < 0 || c.Limit < 0 || c.MaxIterations < 0:
		return errors.New("--every, --limit and --max-iterations cannot be negative")
	case c.PriceIn < 0 || c.PriceOut < 0:
		return errors.New("--price-in and --price-out cannot be negative")
	case c.ProblemTimeout < 0:
		return errors.New("--problem-timeout cannot be negative")
	}
	if c.Fake != "" {
		if _, err := fakellm.ParseHumanEvalMode(c.Fake); err != nil {
			return fmt.Errorf("--fake: %w", err)
		}
	}
	opts, err := c.jobOptions()
	if err != nil {
		return err
	}
	// Every problem's job has these options: a spec they make invalid is
	// refused here, before a row is written (or the out directory's
	// settings), not as an errored row per problem.
	raw, err := json.Marshal(map[string]any{"name": jobName("HumanEval/0"), "prompt": "sample problem", "options": opts})
	if err != nil {
		return err
	}
	if _, err := messages.DecodeJobSpecJSON(raw); err != nil {
		return fmt.Errorf("--option: the job spec is refused: %w", err)
	}
	return c.Stack.Validate()
}

// jobOptions are the jobs' options: max_iterations, then Options. The
// agent backend is bounded by agent_max_turns and refuses max_iterations:
// it goes only when an --option names it.
func (c Config) jobOptions() (map[string]any, error) {
	o := map[string]any{"max_iterations": c.withDefaults().MaxIterations}
	defer func() {
		if o["backend"] == "agent" && !c.optionNamed("max_iterations") {
			delete(o, "max_iterations")
		}
	}()
	for _, kv := range c.Options {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--option %q: want name=value", kv)
		}
		var val any
		if json.Unmarshal([]byte(v), &val) != nil {
			val = v
		}
		o[k] = val
	}
	return o, nil
}

// optionNamed reports whether an --option sets name.
func (c Config) optionNamed(name string) bool {
	for _, kv := range c.Options {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return true
		}
	}
	return false
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// ParseArgs reads the command line over base (the environment's settings);
// terminal says stderr is one (the progress bar's default). -h prints the
// usage to stderr and returns flag.ErrHelp.
func ParseArgs(args []string, base config.Config, stderr io.Writer, terminal bool) (Config, error) {
	c := Config{Stack: base, Progress: terminal}
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Problems, "problems", "", "problem set, JSONL in HumanEval's format (default ../shared/datasets/HumanEval.jsonl)")
	fs.StringVar(&c.Out, "out", "eval-out", "directory of results.jsonl (resumed if there), results.csv and results.md")
	fs.StringVar(&c.Fake, "fake", "", "answer with the fake model: canonical or plausible-wrong (default: the configured model)")
	fs.IntVar(&c.Parallel, "parallel", 2, "problems run at once")
	fs.IntVar(&c.Every, "every", 1, "take every Nth problem")
	fs.IntVar(&c.Limit, "limit", 0, "stop after N problems (0: all)")
	var tasks multi
	fs.Var(&tasks, "task", "run only this task ID, e.g. HumanEval/0 (repeatable)")
	fs.IntVar(&c.MaxIterations, "max-iterations", 5, "each job's options.max_iterations")
	var opts multi
	fs.Var(&opts, "option", "job option key=value, e.g. cache=override (repeatable)")
	fs.Float64Var(&c.PriceIn, "price-in", 0, "US dollars per million input tokens, for the cost columns")
	fs.Float64Var(&c.PriceOut, "price-out", 0, "US dollars per million output tokens")
	fs.DurationVar(&c.ProblemTimeout, "problem-timeout", 20*time.Minute, "bound on one problem's job")
	fs.BoolVar(&c.Progress, "progress", c.Progress, "draw a progress bar (default: when stderr is a terminal)")
	c.Stack.Register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: eval [--problems FILE] [--out DIR] [--fake canonical|plausible-wrong] [--parallel N] [--option k=v] ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.Options, c.Tasks = opts, tasks
	return c, c.Validate()
}
