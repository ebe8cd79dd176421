package submit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// cancelCmd is `submit cancel JOB_ID [--reason TEXT] [--json]`: the job is
// cancelled (its stages in flight stopped) and the result says who did it
// and when. It exits 0 once the job is cancelled, 1 when it had already
// finished (nothing to cancel), 2 for a job nobody knows.
func cancelCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.settingsFlagSet()
	reason := fs.String("reason", "", "why, kept on the result")
	asJSON := fs.Bool("json", false, "print the cancelled job's result object as JSON on stdout")
	wait := fs.Duration("wait", time.Minute, "how long to wait for the coordinator to finish the job")
	pos, err := in.positional(fs, 1)
	if err != nil {
		return 0, err
	}
	id := pos[0]
	if err := checkJobID(id); err != nil {
		return 0, err
	}
	st, err := in.startClient(ctx)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	before, err := st.Client.Cancel(ctx, id, cliCaller(), *reason)
	switch {
	case errors.Is(err, client.ErrNotFound):
		return 0, usagef("job %s: not found", id)
	case err != nil:
		return 0, err
	case before.Status != messages.StatusRunning:
		fmt.Fprintf(in.io.Stderr, "job %s had already finished (%s): nothing to cancel\n", id, before.Status)
		if *asJSON { // the result it finished with, as the HTTP API's 409 has it
			return ExitFailed, printJSON(in.io.Stdout, before)
		}
		return ExitFailed, nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	res, err := st.Client.WaitResult(waitCtx, id)
	if err != nil {
		return 0, fmt.Errorf("job %s: cancel sent, but the job has not finished (is a coordinator running?): %w", id, err)
	}
	if *asJSON { // the exit code says what the text would
		code := ExitSuccess
		if res.Cancelled == nil {
			code = ExitFailed
		}
		return code, printJSON(in.io.Stdout, res)
	}
	if c := res.Cancelled; c != nil {
		fmt.Fprintf(in.io.Stdout, "job %s cancelled by %s at %s\n", id, messages.Printable(c.By), c.At.Local().Format(time.DateTime))
		return ExitSuccess, nil
	}
	// The job finished on its own before the request was taken.
	fmt.Fprintf(in.io.Stdout, "job %s finished (%s) before it could be cancelled\n", id, res.Status)
	return ExitFailed, nil
}

// cliCaller names who cancels from this CLI: cli:<user>@<host>.
func cliCaller() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "cli:" + name + "@" + host
}
