package submit

import (
	"context"
	"flag"
	"fmt"
)

// group runs the subcommand of a command group (task, dlq, pool,
// profile...) that args name. `submit NAME`, `submit NAME --help` and
// `submit help NAME` print the group's usage: with no subcommand it is a
// usage error (exit 2), asked for it is help (exit 0), as every command's
// --help is. Every subcommand's usage error is the whole group's usage.
func group(ctx context.Context, in *invocation, name string, cmds []command) (int, error) {
	if len(in.args) == 0 {
		return 0, in.usageError()
	}
	if isHelp(in.args[0]) {
		fmt.Fprintf(in.io.Stdout, "usage: submit %s\n\nsubmit %s COMMAND --help tells more about each.\n", usages(cmds, "\n       submit "), name)
		return 0, flag.ErrHelp
	}
	c, ok := find(cmds, in.args[0])
	if !ok {
		return 0, in.usageError()
	}
	return c.action(ctx, &invocation{name: in.name + " " + c.name, usage: in.usage, args: in.args[1:], cfg: in.cfg, io: in.io})
}
