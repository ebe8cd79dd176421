package submit

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ExitInterrupted is the exit code of a command stopped by Ctrl-C (or
// SIGTERM) while it followed a job: 128 + SIGINT, as shells do. The job
// itself goes on (unless it ran inside the command, --local).
const ExitInterrupted = 130

// detachedError is a command that stopped following a job before its end:
// interrupted, or out of --wait. What matters then is that the job goes
// on, and how to get back to it.
type detachedError struct {
	id    string
	local bool  // the job ran in this process: it stops too
	cause error // ctx's error: Canceled (a signal) or DeadlineExceeded (--wait)
}

func (e *detachedError) Error() string {
	what := "interrupted"
	if errors.Is(e.cause, context.DeadlineExceeded) {
		what = "still running after --wait"
	}
	if e.local {
		return fmt.Sprintf("%s: job %s ran inside this process (--local), so it stopped with it", what, e.id)
	}
	return fmt.Sprintf("%s: job %s goes on; this command only stopped following it", what, e.id)
}

func (e *detachedError) Unwrap() error { return e.cause }

// printDetached tells how to get back to the job, and returns the exit code.
func printDetached(w io.Writer, e *detachedError) int {
	if e.local {
		fmt.Fprintln(w, "submit: "+e.Error())
	} else {
		printFollowHints(w, "submit: "+e.Error(), e.id)
	}
	if errors.Is(e.cause, context.Canceled) {
		return ExitInterrupted
	}
	return ExitInfra
}

// detached is err as a detachedError when ctx ended while the command
// followed job id.
func detached(ctx context.Context, err error, id string, local bool) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return &detachedError{id: id, local: local, cause: ctx.Err()}
}

// printFollowHints writes what happened to a job left running, then how
// to get back to it.
func printFollowHints(w io.Writer, what, id string) {
	fmt.Fprintln(w, what)
	fmt.Fprintf(w, "  follow it: submit watch %s   (JSON lines: submit events %s)\n  see it:    submit status %s\n  cancel it: submit cancel %s\n",
		id, id, id, id)
}
