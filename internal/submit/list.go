package submit

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

// listCmd is `submit list [--status S] [--limit N] [-o json|yaml]`: the
// newest jobs first, from the job index the coordinator keeps (the web
// UI's list and GET /v1/jobs read the same).
func listCmd(ctx context.Context, in *invocation) (int, error) {
	fs := in.settingsFlagSet()
	var format outputFormat
	registerOutput(fs, &format, "the page of jobs")
	status := fs.String("status", "", "only the jobs of this status: running, succeeded, failed, errored")
	limit := fs.Int("limit", 20, fmt.Sprintf("at most this many jobs (at most %d)", client.MaxPageSize))
	offset := fs.Int("offset", 0, "skip this many of the newest jobs first")
	if _, err := in.positional(fs, 0); err != nil {
		return 0, err
	}
	if *limit < 1 || *limit > client.MaxPageSize {
		return 0, usagef("--limit %d: want 1 to %d", *limit, client.MaxPageSize)
	}
	if *offset < 0 {
		return 0, usagef("--offset %d: want 0 or more", *offset)
	}
	if err := checkStatus(*status); err != nil {
		return 0, err
	}
	return in.withClient(ctx, func(c *client.Client) (int, error) {
		page, err := c.Summaries(ctx, client.SummaryQuery{Status: messages.JobStatus(*status), Offset: *offset, Limit: *limit})
		if err != nil {
			return 0, err
		}
		if format != formatHuman {
			return ExitSuccess, printAs(in.io.Stdout, format, page)
		}
		printJobList(in.io.Stdout, page, time.Now())
		return ExitSuccess, nil
	})
}

// statuses are what --status takes: the statuses of the job index
// (cancelled where the deployment has it as a status of its own).
var statuses = []string{"running", "succeeded", "failed", "errored", "cancelled"}

// checkStatus refuses a --status no job can have.
func checkStatus(s string) error {
	if s == "" || slices.Contains(statuses, s) {
		return nil
	}
	return usagef("--status %q: want one of %s", s, strings.Join(statuses, ", "))
}

// printJobList prints a page of jobs as a table, and the counts by status.
func printJobList(w io.Writer, page *client.SummaryPage, now time.Time) {
	if len(page.Jobs) == 0 {
		fmt.Fprintln(w, "no jobs")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATUS\tSUBMITTED\tTOOK\tITER\tTASK")
	for _, j := range page.Jobs {
		took := "running for " + now.Sub(j.SubmittedAt).Round(time.Second).String()
		if j.FinishedAt != nil {
			took = j.FinishedAt.Sub(j.SubmittedAt).Round(100 * time.Millisecond).String()
		}
		status := string(j.Status)
		if j.Status == messages.StatusRunning && j.Phase != "" {
			status += " (" + j.Phase + ")"
		}
		about := j.Prompt
		if j.Name != "" {
			about = j.Name + ": " + about
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", messages.QuoteName(j.JobID), messages.Printable(status),
			j.SubmittedAt.Local().Format(time.DateTime), took, j.Iterations, messages.Printable(oneLine(trimRunes(about, 60))))
	}
	tw.Flush()
	if shown := page.Offset + len(page.Jobs); shown < page.Total {
		fmt.Fprintf(w, "%d of %d jobs shown; the next ones: --offset %d\n", len(page.Jobs), page.Total, shown)
	}
}
