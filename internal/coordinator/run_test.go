package coordinator_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

var (
	salesObj  = "sha256:" + strings.Repeat("a", 64) + ".csv"
	newCSV    = "sha256:" + strings.Repeat("b", 64) + ".csv"
	newTSV    = "sha256:" + strings.Repeat("c", 64) + ".tsv"
	configObj = "sha256:" + strings.Repeat("d", 64) + ".json"
	dirObj    = "sha256:" + strings.Repeat("e", 64) + ".tar"
)

// putResult stores a finished job's result as the coordinator would.
func (e *env) putResult(t *testing.T, r messages.Result) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.res.JobResults.Put(ctxT(t), bus.JobKey(r.JobID), b); err != nil {
		t.Fatal(err)
	}
}

func finishedJob() messages.Result {
	spec := messages.JobSpec{Prompt: "sum sales", Samples: map[string]string{"sales": salesObj},
		Inputs: map[string]messages.Type{"threshold": messages.TypeFloat, "strict": messages.TypeBool, "label": messages.TypeStr,
			"limit": messages.TypeInt, "config": messages.TypeFile, "extra": messages.TypeDir},
		Outputs: map[string]messages.Type{"total": messages.TypeFloat, "report": messages.TypeFile}}
	spec.Normalize("m")
	return messages.Result{V: 1, JobID: "job-src", Status: messages.StatusSucceeded, Success: true, Spec: &spec, Image: "env-1",
		Solution: &messages.Solution{Language: "python", Code: "print(1)\n", Packages: []string{"pandas"}}, DetectedPackages: []string{"pandas"}}
}

func TestPrepareRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	e.putResult(t, finishedJob())
	failed := finishedJob()
	failed.JobID, failed.Status, failed.Success = "job-failed", messages.StatusFailed, false
	e.putResult(t, failed)

	sales := messages.SampleRef{Name: "sales", Object: salesObj, FileName: "sales.csv"}
	tests := []struct {
		name        string
		req         messages.RunRequest
		wantSamples []messages.SampleRef
		wantArgs    map[string]string
		wantErr     string
	}{
		{name: "no changes runs on the job's own samples, each passed by its option", req: messages.RunRequest{FromJob: "job-src"},
			wantSamples: []messages.SampleRef{sales},
			wantArgs:    map[string]string{"sales": "/var/inputs/sales.csv"}},
		{name: "typed values in canonical form", req: messages.RunRequest{FromJob: "job-src",
			Args: map[string]string{"threshold": "1e3", "strict": "false", "label": "a b; rm -rf / `x`", "limit": "+7"}},
			wantSamples: []messages.SampleRef{sales},
			wantArgs:    map[string]string{"threshold": "1000", "strict": "false", "label": "a b; rm -rf / `x`", "limit": "7", "sales": "/var/inputs/sales.csv"}},
		{name: "a new sample of the same type keeps the default path", req: messages.RunRequest{FromJob: "job-src", Samples: map[string]string{"sales": newCSV}},
			wantSamples: []messages.SampleRef{{Name: "sales", Object: newCSV, FileName: "sales.csv"}},
			wantArgs:    map[string]string{"sales": "/var/inputs/sales.csv"}},
		{name: "a new sample of another type is named by its option", req: messages.RunRequest{FromJob: "job-src", Samples: map[string]string{"sales": newTSV}},
			wantSamples: []messages.SampleRef{{Name: "sales", Object: newTSV, FileName: "sales.tsv"}},
			wantArgs:    map[string]string{"sales": "/var/inputs/sales.tsv"}},
		{name: "File and Dir inputs are mounted and passed", req: messages.RunRequest{FromJob: "job-src", Samples: map[string]string{"config": configObj, "extra": dirObj}},
			wantSamples: []messages.SampleRef{{Name: "config", Object: configObj, FileName: "config.json"}, {Name: "extra", Object: dirObj, FileName: "extra", Dir: true}, sales},
			wantArgs:    map[string]string{"config": "/var/inputs/config.json", "extra": "/var/inputs/extra", "sales": "/var/inputs/sales.csv"}},
		{name: "unknown job", req: messages.RunRequest{FromJob: "job-none"}, wantErr: "run.from_job: job job-none is unknown or not finished"},
		{name: "bad job id", req: messages.RunRequest{FromJob: "a.b"}, wantErr: "run.from_job"},
		{name: "failed job", req: messages.RunRequest{FromJob: "job-failed"}, wantErr: "did not succeed"},
		{name: "undeclared input", req: messages.RunRequest{FromJob: "job-src", Args: map[string]string{"thresh": "1"}}, wantErr: "run.args.thresh: job job-src has no input thresh"},
		{name: "bool is true or false only", req: messages.RunRequest{FromJob: "job-src", Args: map[string]string{"strict": "yes"}}, wantErr: `run.args.strict: bool input "yes" is not true or false`},
		{name: "int", req: messages.RunRequest{FromJob: "job-src", Args: map[string]string{"limit": "1.5"}}, wantErr: "run.args.limit"},
		{name: "float", req: messages.RunRequest{FromJob: "job-src", Args: map[string]string{"threshold": "inf"}}, wantErr: "run.args.threshold"},
		{name: "a File input is not a value", req: messages.RunRequest{FromJob: "job-src", Args: map[string]string{"config": "/etc/passwd"}}, wantErr: "run.args.config: is a File input"},
		{name: "unknown sample", req: messages.RunRequest{FromJob: "job-src", Samples: map[string]string{"orders": newCSV}}, wantErr: "run.samples.orders"},
		{name: "a path is not an object", req: messages.RunRequest{FromJob: "job-src", Samples: map[string]string{"sales": "/tmp/x.csv"}}, wantErr: "run.samples.sales: must be an object reference"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sub, err := c.PrepareRun(ctxT(t), "run-1", tc.req)
			if tc.wantErr != "" {
				var fe *messages.FieldError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &fe) {
					t.Fatalf("err = %v, want a field error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantSamples, sub.Samples); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantArgs, sub.Rerun.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if sub.JobID != "run-1" || sub.Rerun.FromJob != "job-src" || sub.Rerun.Solution.Code != "print(1)\n" || sub.Rerun.Image != "env-1" ||
				!cmp.Equal(sub.Rerun.Packages, []string{"pandas"}) || sub.Spec.Outputs["report"] != messages.TypeFile {
				t.Errorf("submission %+v run %+v", sub, sub.Rerun)
			}
		})
	}
}

// TestRunSubmission: a run submission goes through HandleSubmit to a
// dispatched run stage, and a bad one finishes with the reason.
func TestRunSubmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.coordinator(t, nil, nil, nil)
	e.putResult(t, finishedJob())
	send := func(jobID string, req messages.RunRequest) {
		b, err := json.Marshal(messages.SubmitJob{V: 1, JobID: jobID, Run: &req})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.HandleSubmit(ctxT(t), bus.NewMessage(bus.SubjectJobsSubmit, b, nil, 1)); err != nil {
			t.Fatal(err)
		}
	}
	send("run-ok", messages.RunRequest{FromJob: "job-src", Args: map[string]string{"limit": "3"}})
	var run *messages.StageCommand
	for _, cmd := range e.commands(t) {
		if cmd.JobID == "run-ok" {
			cmd := cmd
			run = &cmd
		}
	}
	if run == nil || run.Stage != messages.StageRun {
		t.Fatalf("dispatched %+v, want one run stage", run)
	}
	var in messages.AcceptanceInput
	if err := json.Unmarshal(run.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.Code != "print(1)\n" || in.Args["limit"] != "3" || in.Outputs["total"] != messages.TypeFloat {
		t.Errorf("run input %+v", in)
	}
	st, err := c.State(ctxT(t), "run-ok")
	if err != nil || st.Phase != machine.PhaseRunning {
		t.Errorf("state phase %s, err %v", st.Phase, err)
	}

	send("run-bad", messages.RunRequest{FromJob: "job-src", Args: map[string]string{"strict": "1"}})
	res := e.result(t, "run-bad")
	if res == nil || res.Success || !strings.Contains(res.Error, "run.args.strict") {
		t.Errorf("result of a bad run: %+v", res)
	}
}
