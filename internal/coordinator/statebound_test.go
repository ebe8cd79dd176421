package coordinator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/machine"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestOverStateLimit: only a successful stage result is turned into its
// failure, which names the stage and the bound and drops the output.
func TestOverStateLimit(t *testing.T) {
	t.Parallel()
	ok := &messages.StageResult{JobID: "j", Seq: 4, Stage: messages.StageCode, Output: json.RawMessage(`{"code":"x"}`),
		Messages: []messages.ChatMessage{{Role: "assistant", Content: "x"}}}
	ev, changed := overStateLimit(machine.Input{Kind: machine.InputStageResult, Result: ok}, 3<<20, DefaultMaxStateBytes)
	if !changed {
		t.Fatal("a result over the bound was left as it is")
	}
	got := ev.Result
	if got.ErrorKind != messages.ErrorPermanent || got.Output != nil || got.Messages != nil || got.Seq != 4 ||
		!strings.Contains(got.Error, "the code result makes the job state 3.0 MiB, over the 1008 KiB bound") {
		t.Errorf("failed result %+v", got)
	}
	if ok.Error != "" || ok.Output == nil {
		t.Error("the original result was changed in place")
	}
	for _, in := range []machine.Input{
		{Kind: machine.InputStageResult, Result: got},
		{Kind: machine.InputCancel, Reason: "x"},
		{Kind: machine.InputSubmitted},
	} {
		if _, changed := overStateLimit(in, 3<<20, DefaultMaxStateBytes); changed {
			t.Errorf("%s input (error %q) changed: only a successful result may be", in.Kind, func() string {
				if in.Result != nil {
					return in.Result.Error
				}
				return ""
			}())
		}
	}
}

// TestTrimJSON: a record over the bound keeps who the job is and how it
// ended and loses its largest fields first; a result says in its notes
// what it lost; what cannot fit even so is an error.
func TestTrimJSON(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 600<<10)
	var s machine.State
	s.JobID, s.Status, s.Error = "j", messages.StatusFailed, "over its bound"
	s.Solution = &messages.Solution{Code: big}
	s.Tests = &messages.Tests{Code: big[:500<<10]}
	s.DataContext = "small"
	b, err := trimJSON(record{State: s}, DefaultMaxStateBytes, nil)
	if err != nil {
		t.Fatal(err)
	}
	var back record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(b) > DefaultMaxStateBytes || back.State.JobID != "j" || back.State.Error != "over its bound" ||
		back.State.Solution != nil || back.State.Tests == nil || back.State.DataContext != "small" {
		t.Errorf("trimmed record (%d bytes): solution %v, tests %v, data context %q, state %+v", len(b),
			back.State.Solution != nil, back.State.Tests != nil, back.State.DataContext, back.State.Outcome)
	}

	res := &messages.Result{JobID: "j", Status: messages.StatusFailed, Error: "e", Notes: []string{"first"},
		Solution: &messages.Solution{Code: big}, Tests: big}
	b, err = boundedResult(res, 512<<10)
	if err != nil {
		t.Fatal(err)
	}
	var r messages.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(b) > 512<<10 || r.JobID != "j" || r.Solution != nil || r.Tests != "" || len(r.Notes) != 2 ||
		r.Notes[0] != "first" || !strings.Contains(r.Notes[1], "[solution tests] left out") {
		t.Errorf("bounded result (%d bytes): solution %v, tests %d bytes, notes %q", len(b), r.Solution != nil, len(r.Tests), r.Notes)
	}

	if _, err := trimJSON(&messages.Result{JobID: "j", Error: big}, 1024, nil); err == nil || !strings.Contains(err.Error(), "over the 1 KiB bound") {
		t.Errorf("an error that cannot fit: %v", err)
	}
}

// TestCheckSubmission: the dry run of the machine's first step refuses a
// submission too large to be stored, naming the field and the bound, and
// lets an ordinary one through.
func TestCheckSubmission(t *testing.T) {
	t.Parallel()
	small := messages.JobSpec{Prompt: "Compute 42.", Outputs: map[string]messages.Type{"answer": messages.TypeInt}}
	small.Normalize("m")
	if err := CheckSubmission(machine.Submission{Spec: small}, 0); err != nil {
		t.Errorf("an ordinary job: %v", err)
	}
	huge := small
	huge.Prompt = strings.Repeat("a long prompt ", 70_000) // 980 KB
	many := small
	var refs []messages.SampleRef
	many.Samples = map[string]string{}
	for i := range 10_000 {
		name := fmt.Sprintf("s%05d", i)
		obj := "sha256:" + strings.Repeat("a", 64) + ".csv"
		many.Samples[name] = obj
		refs = append(refs, messages.SampleRef{Name: name, Object: obj, FileName: name + ".csv"})
	}
	for name, sub := range map[string]machine.Submission{
		"a 980 KB prompt": {Spec: huge},
		"10,000 samples":  {Spec: many, Samples: refs},
	} {
		err := CheckSubmission(sub, 0)
		var fe *messages.FieldError
		if err == nil || !strings.Contains(err.Error(), "over the 1008 KiB bound of one stored job") || !asFieldError(err, &fe) || fe.Field != "spec" {
			t.Errorf("%s: %v, want a spec field error naming the bound", name, err)
		}
	}
}

func asFieldError(err error, fe **messages.FieldError) bool {
	e, ok := err.(*messages.FieldError)
	*fe = e
	return ok
}
