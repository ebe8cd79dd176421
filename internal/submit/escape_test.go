package submit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

const (
	sgrRed   = "\x1b[31m"         // recolours the terminal
	oscTitle = "\x1b]0;title\x07" // retitles the window
)

// rawControls reports whether s holds a control character a terminal acts
// on (anything but \n and \t; \r only as progress redraws use it).
func rawControls(s string) bool {
	s = strings.ReplaceAll(s, "\r\x1b[K", "") // the progress line's own redraw
	return strings.ContainsAny(s, "\x1b\x07\r\u009b")
}

// TestJobFileNamesAreEscaped: a job file whose field or output names hold
// escape sequences gets an error that shows them, escaped.
func TestJobFileNamesAreEscaped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ job, want string }{
		{"prompt: x\n\"\\e[31m\": 1\n", `"\x1b[31m": unknown field`},
		{"prompt: x\noutputs: {\"\\e]0;title\\a\": int}\n", `"outputs.\x1b]0;title\a": must be a Python identifier`},
	} {
		path := filepath.Join(t.TempDir(), "job.yaml")
		if err := os.WriteFile(path, []byte(tc.job), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, testConfig(t), path)
		if code != ExitUsage {
			t.Errorf("exit %d, want %d", code, ExitUsage)
		}
		if rawControls(stdout + stderr) {
			t.Errorf("output holds raw control characters: %q", stdout+stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("stderr %q, want it to contain %q", stderr, tc.want)
		}
	}
}

// TestResultTextIsEscaped: names and strings from a result or an event
// (chosen by whoever can write to the bus) are printed escaped.
func TestResultTextIsEscaped(t *testing.T) {
	t.Parallel()
	res := &messages.Result{JobID: "job-1", Error: "failed " + sgrRed + "badly", Output: "script said " + oscTitle,
		Outputs:  map[string]any{oscTitle: "v" + sgrRed, "total": 3.0},
		Solution: &messages.Solution{Code: "print('\x1b[2J')\n"}}
	var summary, run bytes.Buffer
	printSummary(&summary, res)
	printRerun(&run, "job-0", res, nil)
	for name, out := range map[string]string{"summary": summary.String(), "run": run.String()} {
		if rawControls(out) {
			t.Errorf("%s holds raw control characters:\n%q", name, out)
		}
		for _, want := range []string{`failed \x1b[31mbadly`, `"\x1b]0;title\a" = `, "  total = 3"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s %q: want it to contain %q", name, out, want)
			}
		}
	}
	if !strings.Contains(run.String(), `script said \x1b]0;title\a`) || !strings.Contains(summary.String(), `print('\x1b[2J')`) {
		t.Errorf("free text not shown escaped:\n%s\n%s", summary.String(), run.String())
	}

	var stderr bytes.Buffer
	p := newProgress(IO{Stderr: &stderr, Terminal: true})
	p.event(messages.Event{Type: messages.EventStageStarted, Stage: messages.Stage(sgrRed + "plan"), Seq: 1})
	p.event(messages.Event{Type: messages.EventStageStarted, Stage: messages.StagePlan, Seq: 2})
	p.event(messages.Event{Type: messages.EventStageFinished, Stage: messages.Stage(oscTitle), Seq: 1, Outcome: "ok" + sgrRed})
	p.done()
	if rawControls(stderr.String()) {
		t.Errorf("progress holds raw control characters: %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), `"\x1b]0;title\a"`) || !strings.Contains(stderr.String(), `ok\x1b[31m`) {
		t.Errorf("progress %q: want the stage and outcome escaped", stderr.String())
	}
}
