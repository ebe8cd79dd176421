package submit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// dlqCommands are the subcommands of `submit dlq`: the dead letters,
// messages that exhausted their deliveries (docs/api.md).
func dlqCommands() []command {
	return []command{
		{"list", "dlq list [--json]", dlqListCmd},
		{"show", "dlq show SEQ", dlqShowCmd},
		{"replay", "dlq replay SEQ", dlqReplayCmd},
	}
}

// dlqCmd is `submit dlq list|show|replay`.
func dlqCmd(ctx context.Context, in *invocation) (int, error) {
	if len(in.args) == 0 {
		return 0, in.usageError()
	}
	c, ok := find(dlqCommands(), in.args[0])
	if !ok {
		return 0, in.usageError()
	}
	return c.action(ctx, &invocation{name: in.name + " " + c.name, usage: in.usage, args: in.args[1:], cfg: in.cfg, io: in.io})
}

// dlqListCmd is `submit dlq list [--json]`: the dead letters, oldest first.
func dlqListCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	asJSON := fs.Bool("json", false, "print the dead letters as JSON")
	if _, err := in.taskArgs(fs, 0); err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		letters, err := c.DeadLetters(ctx, 0)
		if err != nil {
			return 0, err
		}
		if *asJSON {
			return ExitSuccess, printJSON(in.io.Stdout, letters)
		}
		printDeadLetters(in.io.Stdout, letters)
		return ExitSuccess, nil
	})
}

func printDeadLetters(w io.Writer, letters []messages.DeadLetterEntry) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tDEAD AT\tJOB\tSTAGE\tSTREAM\tDELIVERIES\tREASON")
	for _, e := range letters {
		l := e.Letter
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", e.Seq, l.DeadAt.UTC().Format(time.DateTime), messages.QuoteName(l.JobID),
			messages.QuoteName(string(l.Stage)), l.Stream, l.Deliveries, messages.Printable(oneLine(trimRunes(l.Reason, 80))))
	}
	tw.Flush()
}

// dlqShowCmd is `submit dlq show SEQ`: the letter as JSON.
func dlqShowCmd(ctx context.Context, in *invocation) (int, error) {
	seq, err := in.dlqSeq()
	if err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		e, err := c.DeadLetter(ctx, seq)
		if errors.Is(err, client.ErrNoDeadLetter) {
			return 0, usagef("%v", err)
		}
		if err != nil {
			return 0, err
		}
		return ExitSuccess, printJSON(in.io.Stdout, e)
	})
}

// dlqReplayCmd is `submit dlq replay SEQ`: the coordinator publishes the
// letter's message again, re-opening the job it failed.
func dlqReplayCmd(ctx context.Context, in *invocation) (int, error) {
	seq, err := in.dlqSeq()
	if err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		r, err := c.Replay(ctx, seq)
		switch {
		case r.Error != "":
			return 0, usagef("%v", err) // refused: the reason is the answer
		case err != nil:
			return 0, err
		}
		what := "published again"
		if r.Reopened {
			what += "; job " + r.JobID + " is running again"
		}
		fmt.Fprintf(in.io.Stdout, "dead letter %d replayed on %s: %s\n", seq, r.Subject, what)
		return ExitSuccess, nil
	})
}

// dlqSeq is the SEQ argument of show and replay.
func (in *invocation) dlqSeq() (uint64, error) {
	pos, err := in.taskArgs(in.flagSet(), 1)
	if err != nil {
		return 0, err
	}
	seq, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil || seq == 0 {
		return 0, usagef("%q is not a dead letter sequence (see submit dlq list)", pos[0])
	}
	return seq, nil
}
