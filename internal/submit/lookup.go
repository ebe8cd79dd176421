package submit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// statusCmd is `submit status JOB_ID [--json]`: the job so far, in the
// human view (view.go) or as its result object.
func statusCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.settingsFlagSet()
	var format outputFormat
	registerOutput(fs, &format, "the result object so far (Contract 5 (docs/contracts.md))")
	pos, err := in.positional(fs, 1)
	if err != nil {
		return 0, err
	}
	if err := checkJobID(pos[0]); err != nil {
		return 0, err
	}
	return printLookup(ctx, in, lookup{id: pos[0], format: format}, (*client.Client).Status)
}

// resultCmd is `submit result JOB_ID [--out DIR]`: the finished job's
// result object, and with --out its files.
func resultCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.settingsFlagSet()
	outDir := fs.String("out", "", "write solution.py, test_solution.py, result.json and the File and Dir outputs to this folder")
	var format outputFormat
	registerOutput(fs, &format, "the result object (Contract 5 (docs/contracts.md))")
	pos, err := in.positional(fs, 1)
	if err != nil {
		return 0, err
	}
	if err := checkJobID(pos[0]); err != nil {
		return 0, err
	}
	return printLookup(ctx, in, lookup{id: pos[0], outDir: *outDir, format: format, withCode: true}, (*client.Client).Result)
}

// checkJobID refuses, before anything connects, an argument that no job
// can have as its id: a usage error (exit 2), not an infrastructure one.
func checkJobID(id string) error {
	if !bus.ValidJobID(id) {
		return usagef("%q is not a job id (job ids look like job-20261124-221047-4bf855e6d6)", id)
	}
	return nil
}

// settingsFlagSet is flagSet with the settings' flags (config.Config.Register):
// a lookup needs the NATS URL and credentials like any other command.
func (in *invocation) settingsFlagSet() *flag.FlagSet {
	fs := in.flagSet()
	in.cfg.Register(fs)
	return fs
}

// lookup is what printLookup looks up and how it prints it.
type lookup struct {
	id       string
	outDir   string       // save the job's files here too
	format   outputFormat // the result object as JSON or YAML, not the human view
	withCode bool         // the human view shows the script
}

// printLookup prints what get finds for job l.id: the human view or, with
// --json, the result object. It exits 0 while the job runs, else as the
// job did.
func printLookup(ctx context.Context, in *invocation, l lookup,
	get func(*client.Client, context.Context, string) (*messages.Result, error)) (int, error) {
	id, outDir := l.id, l.outDir
	st, err := in.startClient(ctx)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	res, err := get(st.Client, ctx, id)
	if errors.Is(err, client.ErrNotFound) {
		return 0, usagef("job %s: not found (or not finished)", id)
	}
	if err != nil {
		return 0, err
	}
	if outDir != "" {
		if err := saveOutListed(ctx, st.Client, outDir, res, in.io); err != nil {
			return 0, err
		}
	}
	if l.format == formatHuman {
		var running []client.RunningStage
		if res.Status == messages.StatusRunning {
			if running, err = st.Client.Running(ctx, id); err != nil {
				return 0, err
			}
		}
		printView(in.io.Stdout, res, l.withCode, running)
	} else if err := printAs(in.io.Stdout, l.format, res); err != nil {
		return 0, err
	}
	if res.Status == messages.StatusRunning {
		return ExitSuccess, nil
	}
	return exitCode(res), nil
}

// eventsCmd is `submit events JOB_ID`: the job's events as JSON lines until
// it ends, exiting as the job did.
func eventsCmd(ctx context.Context, in *invocation) (int, error) {
	pos, err := in.positional(in.settingsFlagSet(), 1)
	if err != nil {
		return 0, err
	}
	if err := checkJobID(pos[0]); err != nil {
		return 0, err
	}
	st, err := in.startClient(ctx)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	// An unknown job sends no events: waiting for them would never end.
	if _, err := st.Client.Status(ctx, pos[0]); errors.Is(err, client.ErrNotFound) {
		return 0, usagef("job %s: not found", pos[0])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	enc := json.NewEncoder(in.io.Stdout)
	res, err := st.Client.Watch(ctx, pos[0], func(e messages.Event) error { return enc.Encode(e) })
	if err != nil {
		return 0, detached(ctx, err, pos[0], false) // Ctrl-C: the job goes on
	}
	return exitCode(res), nil
}
