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
		{"list", "dlq list [-o json|yaml]", dlqListCmd},
		{"show", "dlq show SEQ [-o json|yaml]", dlqShowCmd},
		{"replay", "dlq replay SEQ", dlqReplayCmd},
	}
}

// dlqCmd is `submit dlq list|show|replay` (group).
func dlqCmd(ctx context.Context, in *invocation) (int, error) {
	return group(ctx, in, "dlq", dlqCommands())
}

// dlqListCmd is `submit dlq list [--json]`: the dead letters, oldest first.
func dlqListCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	var format outputFormat
	registerOutput(fs, &format, "the dead letters")
	if _, err := in.taskArgs(fs, 0); err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		letters, err := c.DeadLetters(ctx, 0)
		if err != nil {
			return 0, err
		}
		if format != formatHuman {
			return ExitSuccess, printAs(in.io.Stdout, format, letters)
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
	format := formatJSON
	seq, err := in.dlqSeq(&format)
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
		return ExitSuccess, printAs(in.io.Stdout, format, e)
	})
}

// dlqReplayCmd is `submit dlq replay SEQ`: the coordinator publishes the
// letter's message again, re-opening the job it failed.
func dlqReplayCmd(ctx context.Context, in *invocation) (int, error) {
	seq, err := in.dlqSeq(nil)
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

// dlqSeq is the SEQ argument of show and replay; format, when not nil,
// takes -o.
func (in *invocation) dlqSeq(format *outputFormat) (uint64, error) {
	fs := in.flagSet()
	if format != nil {
		registerOutput(fs, format, "the dead letter")
	}
	pos, err := in.taskArgs(fs, 1)
	if err != nil {
		return 0, err
	}
	seq, err := strconv.ParseUint(pos[0], 10, 64)
	if err != nil || seq == 0 {
		return 0, usagef("%q is not a dead letter sequence (see submit dlq list)", pos[0])
	}
	return seq, nil
}
