package machine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Code mode (Contract 8): a job of mode codemode is a conversation in
// which the model writes Python programs over the job's tools. The
// machine describes the tools (codemode_tools, once), then alternates
// model turns (codemode_turn) and program runs (codemode_exec):
//
//   - multi-turn (max_turns > 0): every run's observation goes back to the
//     model; a reply without code is the answer and ends the job; after
//     max_turns replies with code the job fails with that reason.
//   - single-shot: the first program that runs without error ends the job
//     with its value; a failed run (or a reply without code) goes back to
//     the model, up to max_retries more times.
//
// The conversation is kept as steps (reply and what came of it); the turn
// stage rebuilds the model's messages from them.

// codeModeStepBudget bounds a step's reply and observation in the state.
const codeModeStepBudget = 16 << 10

// trimStep keeps a step within codeModeStepBudget.
func trimStep(st messages.CodeModeStep) messages.CodeModeStep {
	st.Reply = trim.HeadTail(st.Reply, codeModeStepBudget)
	st.Observation = trim.HeadTail(st.Observation, codeModeStepBudget)
	return st
}

// CodeModeRun is the part of the state a code-mode job uses.
type CodeModeRun struct {
	CodeMode *CodeModeState `json:"codemode,omitempty"`
}

// CodeModeState is a code-mode job's conversation and result so far.
type CodeModeState struct {
	Tools json.RawMessage         `json:"tools,omitempty"` // the descriptions, once known
	Steps []messages.CodeModeStep `json:"steps,omitempty"`
	// Reply is the reply whose program is running.
	Reply   string                   `json:"reply,omitempty"`
	Turns   int                      `json:"turns"`
	Code    string                   `json:"code,omitempty"`
	Summary string                   `json:"summary,omitempty"`
	Value   json.RawMessage          `json:"value,omitempty"`
	Error   string                   `json:"error,omitempty"`
	Events  []messages.CodeModeEvent `json:"events,omitempty"`
	// Files are what the programs wrote under /var/outputs, the last
	// run's file of a name winning.
	Files []messages.CodeModeFile `json:"files,omitempty"`
}

// codeModeKind is mode: codemode.
func codeModeKind() Kind {
	return Kind{
		Name:  "codemode",
		Is:    func(sub *Submission) bool { return sub.Spec.Mode == messages.ModeCodeMode },
		Start: (*Stepper).startCodeMode,
		Results: []Row{
			On(messages.StageCodeModeTools, (*Stepper).codeModeToolsDescribed),
			On(messages.StageCodeModeTurn, (*Stepper).codeModeReplied),
			On(messages.StageCodeModeExec, (*Stepper).codeModeRan),
		},
		Phases:    Phases{PhaseCodeMode: {PhaseNew}},
		succeeded: "answered",
	}
}

// startCodeMode asks for the tools' descriptions, which every turn's
// prompt shows.
func (m *Stepper) startCodeMode(*Submission) {
	m.s.CodeMode = &CodeModeState{}
	m.Enter(PhaseCodeMode)
	m.Dispatch(messages.StageCodeModeTools, messages.CodeModeToolsInput{Tools: nonNil(m.s.Spec.Tools)})
}

func (m *Stepper) codeModeToolsDescribed(_ Pending, out messages.CodeModeToolsOutput) {
	m.s.CodeMode.Tools = out.Descriptions
	m.codeModeTurn()
}

// codeModeTurn asks the model for its next reply.
func (m *Stepper) codeModeTurn() {
	s, cm := m.s, m.s.CodeMode
	cm.Turns++
	s.Iteration = cm.Turns
	spec := s.Spec.CodeModeSpec
	m.Dispatch(messages.StageCodeModeTurn, messages.CodeModeTurnInput{
		Tools: cm.Tools, Skills: spec.Skills, SystemPromptPrefix: spec.SystemPromptPrefix,
		MultiTurn: spec.MultiTurn(), History: spec.History, Message: spec.Message, Steps: cm.Steps, Interpreter: spec.Interpreter,
	})
}

// codeModeReplied runs the reply's program, or takes a reply without one:
// the answer (multi-turn) or a mistake to point out (single-shot).
func (m *Stepper) codeModeReplied(_ Pending, out messages.CodeModeTurnOutput) {
	s, cm := m.s, m.s.CodeMode
	spec := s.Spec.CodeModeSpec
	if out.Code == "" && out.Cut {
		// Cut short: not the answer, whatever it says; asked again.
		const why = "the reply was cut off before it ended (or was empty)"
		cm.Steps = append(cm.Steps, trimStep(messages.CodeModeStep{Reply: out.Reply, Cut: true}))
		m.codeModeEvent(messages.CodeModeEvent{Type: "error", Error: why, Text: out.Prose})
		if !spec.MultiTurn() {
			m.codeModeRetry(why)
			return
		}
		if cm.Turns >= s.Spec.MaxTurns {
			m.codeModeFail(messages.MaxTurnsReason(s.Spec.MaxTurns))
			return
		}
		m.codeModeTurn()
		return
	}
	if out.Code == "" {
		if spec.MultiTurn() {
			cm.Summary = out.Prose
			m.codeModeEvent(messages.CodeModeEvent{Type: "answer", Text: out.Prose})
			m.Finish(messages.StatusSucceeded, "")
			return
		}
		cm.Steps = append(cm.Steps, trimStep(messages.CodeModeStep{Reply: out.Reply, NoCode: true}))
		m.codeModeEvent(messages.CodeModeEvent{Type: "error", Error: "no code block in the reply", Text: out.Prose})
		m.codeModeRetry("no code block in the reply")
		return
	}
	cm.Reply, cm.Code = out.Reply, out.Code
	if !spec.MultiTurn() {
		cm.Summary = out.Prose
	}
	m.codeModeEvent(messages.CodeModeEvent{Type: "code", Code: out.Code})
	m.Dispatch(messages.StageCodeModeExec, messages.CodeModeExecInput{Code: out.Code, Tools: nonNil(spec.Tools),
		Scope: s.JobID, Interpreter: spec.Interpreter})
}

// codeModeRan takes a program's run.
func (m *Stepper) codeModeRan(_ Pending, out messages.CodeModeExecOutput) {
	s, cm := m.s, m.s.CodeMode
	step := messages.CodeModeStep{Reply: cm.Reply, Observation: out.Observation, Failed: !out.OK}
	cm.Reply = ""
	if out.OK {
		cm.Value = out.Value
	}
	cm.Files = mergeFiles(cm.Files, out.Files)
	if s.Spec.MultiTurn() {
		cm.Steps = append(cm.Steps, trimStep(step))
		m.codeModeEvent(messages.CodeModeEvent{Type: "observation", Observation: out.Observation})
		if cm.Turns >= s.Spec.MaxTurns {
			m.codeModeFail(messages.MaxTurnsReason(s.Spec.MaxTurns))
			return
		}
		m.codeModeTurn()
		return
	}
	if out.OK {
		m.codeModeEvent(messages.CodeModeEvent{Type: "observation", Observation: out.Observation})
		m.Finish(messages.StatusSucceeded, "")
		return
	}
	cm.Steps = append(cm.Steps, trimStep(step))
	m.codeModeEvent(messages.CodeModeEvent{Type: "error", Error: out.Error})
	m.codeModeRetry(out.Error)
}

// codeModeRetry asks again, or fails the job once max_retries is used up.
func (m *Stepper) codeModeRetry(lastError string) {
	cm := m.s.CodeMode
	if attempts := m.s.Spec.Retries() + 1; cm.Turns >= attempts {
		m.codeModeFail(messages.MaxRetriesReason(attempts, lastError))
		return
	}
	m.codeModeTurn()
}

func (m *Stepper) codeModeFail(reason string) {
	m.s.CodeMode.Error = reason
	m.Finish(messages.StatusFailed, reason)
}

func (m *Stepper) codeModeEvent(e messages.CodeModeEvent) {
	cm := m.s.CodeMode
	e.Turn = cm.Turns
	cm.Events = append(cm.Events, e)
	m.Note(fmt.Sprintf("codemode turn %d: %s", e.Turn, e.Type))
}

// codeModeResult is the result's code-mode part (nil for other jobs).
func codeModeResult(s State) *messages.CodeModeResult {
	cm := s.CodeMode
	if cm == nil {
		return nil
	}
	value := cm.Value
	if value == nil {
		value = json.RawMessage("null")
	}
	events := cm.Events
	if events == nil {
		events = []messages.CodeModeEvent{}
	}
	errText := cm.Error
	if errText == "" && s.Status != messages.StatusSucceeded {
		errText = s.Error
	}
	outputs, charts := []messages.CodeModeFile{}, []messages.CodeModeFile{}
	for _, f := range cm.Files {
		outputs = append(outputs, f)
		if f.Chart {
			charts = append(charts, f)
		}
	}
	return &messages.CodeModeResult{Code: cm.Code, Summary: cm.Summary, Value: value, Error: errText, Turns: cm.Turns,
		Outputs: outputs, Charts: charts, Events: events}
}

// maxCodeModeFiles bounds the files a job's state lists.
const maxCodeModeFiles = 64

// mergeFiles adds a run's files to the job's: a name written again is
// replaced; past maxCodeModeFiles the newest are dropped.
func mergeFiles(have, run []messages.CodeModeFile) []messages.CodeModeFile {
	for _, f := range run {
		i := slices.IndexFunc(have, func(h messages.CodeModeFile) bool { return h.Name == f.Name })
		switch {
		case i >= 0:
			have[i] = f
		case len(have) < maxCodeModeFiles:
			have = append(have, f)
		}
	}
	return have
}
