package coordinator

import (
	"encoding/json"
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
