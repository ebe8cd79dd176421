package submit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// poolCommands are the subcommands of `submit pool`: a worker pool's pause
// switch (River's paused queues), for a model provider's outage.
func poolCommands() []command {
	return []command{
		{"pause", "pool pause POOL [--reason TEXT] [-o json|yaml]", poolSwitchCmd(true)},
		{"resume", "pool resume POOL [--reason TEXT] [-o json|yaml]", poolSwitchCmd(false)},
	}
}

// poolCmd is `submit pool pause|resume POOL` (group).
func poolCmd(ctx context.Context, in *invocation) (int, error) {
	return group(ctx, in, "pool", poolCommands())
}

// poolSwitchCmd pauses (paused) or resumes the pool named: its workers
// fetch no new stage command while it is paused, and finish those they
// hold; stage commands wait in its queue until it is resumed.
func poolSwitchCmd(paused bool) func(context.Context, *invocation) (int, error) {
	return func(ctx context.Context, in *invocation) (int, error) {
		fs := in.settingsFlagSet()
		reason := fs.String("reason", "", "why, kept with the switch (the queues page shows it)")
		var format outputFormat
		registerOutput(fs, &format, "the switch")
		pos, err := in.positional(fs, 1)
		if err != nil {
			return 0, err
		}
		return in.withClient(ctx, func(c *client.Client) (int, error) {
			p, err := c.PausePool(ctx, pos[0], paused, cliCaller(), *reason)
			var fe *messages.FieldError
			switch {
			case errors.As(err, &fe):
				return 0, err // a usage error: the field is named
			case errors.Is(err, client.ErrNoPauseSwitch):
				return 0, usagef("%v", err)
			case err != nil:
				return 0, err
			}
			if format != formatHuman {
				return ExitSuccess, printAs(in.io.Stdout, format, p)
			}
			what := "resumed: its workers take stage commands again"
			if p.Paused {
				what = "paused: its workers take no new stage command and finish those they hold (submit pool resume " + p.Pool + ")"
			}
			fmt.Fprintf(in.io.Stdout, "pool %s %s; by %s at %s\n", p.Pool, what, messages.Printable(p.By), p.At.Local().Format(time.DateTime))
			return ExitSuccess, nil
		})
	}
}
