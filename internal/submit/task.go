package submit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// taskCommands are the subcommands of `submit task`.
func taskCommands() []command {
	return []command{
		{"register", "task register NAME JOB_ID [--replace] [--description TEXT] [run settings: --resources cpu=N,memory=Q --timeout D --retries N --cache MODE --env K=V --secret NAME]", taskRegisterCmd},
		{"run", "task run NAME [--input name=value] [--sample name=path] [--json] [--out DIR] [--local] [run settings over the task's]", taskRerunCmd},
		{"list", "task list [-o json|yaml]", taskListCmd},
		{"show", "task show NAME [-o json|yaml]", taskShowCmd},
		{"delete", "task delete NAME", taskDeleteCmd},
	}
}

// taskCmd is `submit task register|run|list|show|delete`: it runs the
// subcommand args name (group).
func taskCmd(ctx context.Context, in *invocation) (int, error) {
	return group(ctx, in, "task", taskCommands())
}

// taskRerunCmd is `submit task run NAME [flags]`: `submit run` on the job
// the task names.
func taskRerunCmd(ctx context.Context, in *invocation) (int, error) {
	name, f, err := in.rerunArgs()
	if err != nil {
		return 0, err
	}
	return rerun(ctx, "", name, f, in.cfg, in.io)
}

// taskRegisterCmd is `submit task register NAME JOB_ID`: the job's script
// kept under NAME.
func taskRegisterCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	description := fs.String("description", "", "what the task is for, for listings")
	replace := fs.Bool("replace", false, "replace the task of that name if there is one (without it, an existing name is refused)")
	admin := fs.Bool("admin", false, adminUsage)
	var run runOptionFlags
	run.register(fs) // the settings of every run of the task: its defaults
	pos, err := in.taskArgs(fs, 2)
	if err != nil {
		return 0, err
	}
	defaults, err := run.runOptions()
	if err != nil {
		return 0, err
	}
	if err := checkJobID(pos[1]); err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		tc := asAdmin(c, *admin)
		register := tc.CreateTask
		if *replace {
			register = tc.RegisterTask
		}
		t, err := register(ctx, pos[0], pos[1], *description, defaults)
		if errors.Is(err, client.ErrTaskExists) {
			return 0, &messages.FieldError{Field: "task", Msg: fmt.Sprintf("%s is registered already (submit task show %s); give --replace to replace it", pos[0], pos[0])}
		}
		if errors.Is(err, client.ErrTaskForbidden) {
			return 0, usagef("%v", err)
		}
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(in.io.Stdout, "task %s registered: the script of job %s\nrun it with: submit task run %s", t.Name, t.JobID, t.Name)
		for _, k := range slices.Sorted(maps.Keys(t.Inputs)) {
			fmt.Fprintf(in.io.Stdout, " [--input %s=<%s>]", messages.QuoteName(k), messages.QuoteName(string(t.Inputs[k])))
		}
		fmt.Fprintln(in.io.Stdout)
		return ExitSuccess, nil
	})
}

// taskListCmd is `submit task list [--json]`: the tasks, as a table or JSON.
func taskListCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	var format outputFormat
	registerOutput(fs, &format, "the tasks")
	if _, err := in.taskArgs(fs, 0); err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		ts, err := c.Tasks(ctx)
		if err != nil {
			return 0, err
		}
		if format != formatHuman {
			if ts == nil {
				ts = []messages.Task{}
			}
			return ExitSuccess, printAs(in.io.Stdout, format, ts)
		}
		printTasks(in.io.Stdout, ts)
		return ExitSuccess, nil
	})
}

func printTasks(w io.Writer, ts []messages.Task) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tJOB\tINPUTS\tOUTPUTS\tTASK")
	for _, t := range ts {
		about := t.Description
		if about == "" {
			about = t.Prompt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", messages.QuoteName(t.Name), messages.QuoteName(t.JobID),
			typeList(t.Inputs), typeList(t.Outputs), messages.Printable(oneLine(trimRunes(about, 60))))
	}
	tw.Flush()
}

// taskShowCmd is `submit task show NAME [-o yaml]`: the task as JSON (or YAML).
func taskShowCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	format := formatJSON
	registerOutput(fs, &format, "the task")
	pos, err := in.taskArgs(fs, 1)
	if err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		t, err := c.Task(ctx, pos[0])
		if errors.Is(err, client.ErrNoTask) {
			return 0, usagef("task %s: not registered", pos[0])
		}
		if err != nil {
			return 0, err
		}
		return ExitSuccess, printAs(in.io.Stdout, format, t)
	})
}

// taskDeleteCmd is `submit task delete NAME`.
func taskDeleteCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	admin := fs.Bool("admin", false, adminUsage)
	pos, err := in.taskArgs(fs, 1)
	if err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		err := asAdmin(c, *admin).DeleteTask(ctx, pos[0])
		if errors.Is(err, client.ErrNoTask) {
			return 0, usagef("task %s: not registered", pos[0])
		}
		if errors.Is(err, client.ErrTaskForbidden) {
			return 0, usagef("%v", err)
		}
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(in.io.Stdout, "task %s deleted\n", pos[0])
		return ExitSuccess, nil
	})
}

// taskArgs parses a task subcommand's flags, with the settings' flags
// (config.Config.Register), and its n positional arguments.
func (in *invocation) taskArgs(fs *flag.FlagSet, n int) ([]string, error) {
	in.cfg.Register(fs)
	return in.positional(fs, n)
}

// withClient checks the settings, starts a client-only stack and calls do with its Client.
func (in *invocation) withClient(ctx context.Context, do func(*client.Client) (int, error)) (int, error) {
	if err := in.cfg.Validate(); err != nil {
		return 0, usagef("%v", err)
	}
	st, err := in.startClient(ctx)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return do(st.Client)
}

// adminUsage is the --admin flag of task register and delete.
const adminUsage = "act as the admin, who may replace or delete a task of any owner (needs the coordinator role's NATS credentials)"

// asAdmin is c asking as the admin when admin is set (client.AsAdmin).
func asAdmin(c *client.Client, admin bool) *client.Client {
	if admin {
		return c.AsAdmin()
	}
	return c
}
