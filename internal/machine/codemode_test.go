package machine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// codeModeSpec is a code-mode job; maxRetries 0 leaves max_retries out
// (the default).
func codeModeSpec(maxTurns, maxRetries int) messages.JobSpec {
	spec := messages.JobSpec{Mode: messages.ModeCodeMode, CodeModeSpec: messages.CodeModeSpec{
		Message: "Weather in Paris?", Tools: []string{"get_weather"}, MaxTurns: maxTurns,
	}}
	if maxRetries != 0 {
		spec.MaxRetries = &maxRetries
	}
	return spec
}

func codeModeWorld(t *testing.T, turns []messages.CodeModeTurnOutput, runs []messages.CodeModeExecOutput) *world {
	w := newWorld(t)
	w.answers[messages.StageCodeModeTools] = []any{messages.CodeModeToolsOutput{Descriptions: json.RawMessage(`[{"name":"get_weather"}]`)}}
	for _, o := range turns {
		w.answers[messages.StageCodeModeTurn] = append(w.answers[messages.StageCodeModeTurn], o)
	}
	for _, o := range runs {
		w.answers[messages.StageCodeModeExec] = append(w.answers[messages.StageCodeModeExec], o)
	}
	return w
}

var (
	turnWithCode = messages.CodeModeTurnOutput{Reply: "```python\nget_weather(city=\"Paris\")\n```", Code: "get_weather(city=\"Paris\")\n"}
	turnAnswer   = messages.CodeModeTurnOutput{Reply: "It is 21 C.", Prose: "It is 21 C."}
	runOK        = messages.CodeModeExecOutput{OK: true, Value: json.RawMessage(`{"temp_c":21}`), Observation: `Value: {"temp_c":21}`}
	runFailed    = messages.CodeModeExecOutput{Error: "line 1: boom", ErrorKind: "runtime", Observation: "Error (runtime): line 1: boom"}
)

func TestCodeModeMultiTurn(t *testing.T) {
	t.Parallel()
	w := codeModeWorld(t, []messages.CodeModeTurnOutput{turnWithCode, turnWithCode, turnWithCode, turnAnswer}, []messages.CodeModeExecOutput{runOK})
	var steps []int
	w.fn[messages.StageCodeModeTurn] = func(c *messages.StageCommand, _ int) any {
		var in messages.CodeModeTurnInput
		if err := json.Unmarshal(c.Input, &in); err != nil {
			t.Fatal(err)
		}
		if !in.MultiTurn || in.Message != "Weather in Paris?" || string(in.Tools) != `[{"name":"get_weather"}]` {
			t.Errorf("turn input %+v", in)
		}
		steps = append(steps, len(in.Steps))
		return nil
	}
	s, _, cmds := run(t, w, codeModeSpec(5, 0), nil)
	got := strings.Join(stagesOf(cmds), ",")
	want := "codemode_tools,codemode_turn,codemode_exec,codemode_turn,codemode_exec,codemode_turn,codemode_exec,codemode_turn"
	if got != want || s.Status != messages.StatusSucceeded {
		t.Fatalf("stages %s, status %s (%s)", got, s.Status, s.Error)
	}
	if len(steps) != 4 || steps[3] != 3 {
		t.Fatalf("steps seen by each turn: %v, want 0..3", steps)
	}
	r := ResultOf(s).CodeMode
	if r == nil || r.Turns != 4 || r.Summary != "It is 21 C." || string(r.Value) != `{"temp_c":21}` || len(r.Events) != 7 || r.Error != "" {
		t.Fatalf("codemode result %+v", r)
	}
}

// TestCodeModeCutReplyIsAskedAgain: a reply cut short (the worker says
// Cut: the token limit, an empty reply) is not the final answer of a
// multi-turn job: the model is asked again, with the step marked cut, and
// the real answer ends the job.
func TestCodeModeCutReplyIsAskedAgain(t *testing.T) {
	t.Parallel()
	cut := messages.CodeModeTurnOutput{Reply: "Let me check.\n```python\nget_weather(", Prose: "Let me check.\n```python\nget_weather(", Cut: true}
	w := codeModeWorld(t, []messages.CodeModeTurnOutput{cut, turnAnswer}, nil)
	var last messages.CodeModeTurnInput
	w.fn[messages.StageCodeModeTurn] = func(c *messages.StageCommand, _ int) any {
		if err := json.Unmarshal(c.Input, &last); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	s, _, cmds := run(t, w, codeModeSpec(5, 0), nil)
	if got := strings.Join(stagesOf(cmds), ","); got != "codemode_tools,codemode_turn,codemode_turn" || s.Status != messages.StatusSucceeded {
		t.Fatalf("stages %s, status %s (%s)", got, s.Status, s.Error)
	}
	if r := ResultOf(s).CodeMode; r.Summary != "It is 21 C." || r.Turns != 2 {
		t.Fatalf("codemode result %+v: want the real answer, in 2 turns", r)
	}
	if len(last.Steps) != 1 || !last.Steps[0].Cut {
		t.Errorf("the second turn's steps %+v: want the cut reply, marked", last.Steps)
	}
}

func TestCodeModeMaxTurns(t *testing.T) {
	t.Parallel()
	w := codeModeWorld(t, []messages.CodeModeTurnOutput{turnWithCode}, []messages.CodeModeExecOutput{runOK})
	s, _, cmds := run(t, w, codeModeSpec(2, 0), nil)
	if s.Status != messages.StatusFailed || s.Error != messages.MaxTurnsReason(2) || len(stagesOf(cmds)) != 5 {
		t.Fatalf("status %s, error %q, stages %v", s.Status, s.Error, stagesOf(cmds))
	}
	if r := ResultOf(s).CodeMode; r.Error != messages.MaxTurnsReason(2) || r.Turns != 2 {
		t.Fatalf("codemode result %+v", r)
	}
}

func TestCodeModeSingleShotRetries(t *testing.T) {
	t.Parallel()
	t.Run("fixed on retry", func(t *testing.T) {
		t.Parallel()
		w := codeModeWorld(t, []messages.CodeModeTurnOutput{turnAnswer, turnWithCode}, []messages.CodeModeExecOutput{runFailed, runOK})
		s, _, _ := run(t, w, codeModeSpec(0, 3), nil)
		r := ResultOf(s).CodeMode
		if s.Status != messages.StatusSucceeded || r.Turns != 3 || string(r.Value) != `{"temp_c":21}` {
			t.Fatalf("status %s (%s), result %+v", s.Status, s.Error, r)
		}
	})
	t.Run("max_retries reached", func(t *testing.T) {
		t.Parallel()
		w := codeModeWorld(t, []messages.CodeModeTurnOutput{turnWithCode}, []messages.CodeModeExecOutput{runFailed})
		s, _, _ := run(t, w, codeModeSpec(0, 1), nil)
		if s.Status != messages.StatusFailed || !strings.HasPrefix(s.Error, "max_retries reached: no program succeeded in 2 attempts; last error: line 1: boom") {
			t.Fatalf("status %s, error %q", s.Status, s.Error)
		}
	})
}

func TestCodeModeToolsMissingFailsJob(t *testing.T) {
	t.Parallel()
	w := codeModeWorld(t, nil, nil)
	w.errs[messages.StageCodeModeTools] = messages.ErrorPermanent
	s, _, _ := run(t, w, codeModeSpec(2, 0), nil)
	if s.Status != messages.StatusFailed || !strings.Contains(s.Error, "codemode_tools") {
		t.Fatalf("status %s, error %q", s.Status, s.Error)
	}
}

// TestCodeModeNoRetryFilesAndInterpreter: max_retries 0 is one attempt;
// the interpreter reaches the turn and exec stages; the files the runs
// wrote are merged by name (the last run's wins) and the images among
// them are the result's charts.
func TestCodeModeNoRetryFilesAndInterpreter(t *testing.T) {
	t.Parallel()
	t.Run("max_retries 0", func(t *testing.T) {
		t.Parallel()
		w := codeModeWorld(t, []messages.CodeModeTurnOutput{turnWithCode}, []messages.CodeModeExecOutput{runFailed})
		spec := codeModeSpec(0, 0)
		zero := 0
		spec.MaxRetries = &zero
		s, _, cmds := run(t, w, spec, nil)
		if s.Status != messages.StatusFailed || !strings.HasPrefix(s.Error, "max_retries reached: no program succeeded in 1 attempts") ||
			len(dispatches(cmds, messages.StageCodeModeTurn)) != 1 {
			t.Fatalf("status %s, error %q, %d turns", s.Status, s.Error, len(dispatches(cmds, messages.StageCodeModeTurn)))
		}
	})
	t.Run("files and charts", func(t *testing.T) {
		t.Parallel()
		chart := messages.CodeModeFile{Name: "t.png", Size: 3, ContentType: "image/png", Chart: true}
		table1 := messages.CodeModeFile{Name: "t.csv", Size: 1, ContentType: "text/csv"}
		table2 := table1
		table2.Size = 2
		first, second := runOK, runOK
		first.Files = []messages.CodeModeFile{table1}
		second.Files = []messages.CodeModeFile{chart, table2}
		w := codeModeWorld(t, []messages.CodeModeTurnOutput{turnWithCode, turnWithCode, turnAnswer}, []messages.CodeModeExecOutput{first, second})
		spec := codeModeSpec(3, 0)
		spec.Interpreter = messages.InterpreterStarlark
		s, _, cmds := run(t, w, spec, nil)
		r := ResultOf(s).CodeMode
		if s.Status != messages.StatusSucceeded || len(r.Outputs) != 2 || r.Outputs[0].Size != 2 || len(r.Charts) != 1 || r.Charts[0].Name != "t.png" {
			t.Fatalf("status %s, outputs %+v, charts %+v", s.Status, r.Outputs, r.Charts)
		}
		for _, c := range append(dispatches(cmds, messages.StageCodeModeExec), dispatches(cmds, messages.StageCodeModeTurn)...) {
			if !strings.Contains(string(c.Input), `"interpreter":"starlark"`) {
				t.Fatalf("%s without the interpreter: %s", c.Stage, c.Input)
			}
		}
	})
}
