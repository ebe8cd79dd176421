package submit

import (
	"context"
	"errors"
	"fmt"

	"github.com/autocoder/autocoder/internal/client"
)

// watchCmd is `submit watch JOB_ID [-o json|yaml]`: a job followed as
// `submit` follows the job it submits, from its first event (the stages
// done so far are drawn again) to its end, then its summary; it exits as
// the job did. It is how to get back to a job after Ctrl-C; `submit
// events` is the same stream as JSON lines, for programs.
func watchCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.settingsFlagSet()
	var format outputFormat
	registerOutput(fs, &format, "the result object at the end")
	pos, err := in.positional(fs, 1)
	if err != nil {
		return 0, err
	}
	id := pos[0]
	if err := checkJobID(id); err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		// An unknown job sends no events: waiting for them would never end.
		if _, err := c.Status(ctx, id); errors.Is(err, client.ErrNotFound) {
			return 0, usagef("job %s: not found", id)
		}
		fmt.Fprintf(in.io.Stderr, "following job %s (Ctrl-C stops following; the job goes on)\n", id)
		res, err := watch(ctx, c, id, in.io)
		if err != nil {
			return 0, detached(ctx, fmt.Errorf("job %s: %w", id, err), id, false)
		}
		if format != formatHuman {
			return exitCode(res), printAs(in.io.Stdout, format, res)
		}
		printSummary(in.io.Stdout, res)
		return exitCode(res), nil
	})
}
