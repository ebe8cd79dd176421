package machine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Ledger is the job's accounting: usage, the stage list, the conversation
// and the notes, each bounded below.
type Ledger struct {
	StageUsage map[messages.Stage]messages.Usage `json:"stage_usage,omitempty"` // exact, even when old stage records are dropped
	Stages     []messages.StageRecord            `json:"stages,omitempty"`
	Usage      messages.Usage                    `json:"usage"`
	CacheHits  int                               `json:"cache_hits"`
	History    []messages.ChatMessage            `json:"history,omitempty"`
	Notes      []string                          `json:"notes,omitempty"` // why the loop did what it did
}

// The state is one KV value (at most about 1 MB, and the coordinator stores
// the result beside it in the outbox), so everything that grows with the
// job is bounded here. The caps are far above what a normal job reaches.
const (
	reportOutputBudget = 6000 // pytest output kept on a report
	caseMessageBudget  = 1000 // per failing case, for the first detailedCases
	caseDetailsBudget  = 2000
	detailedCases      = 10
	briefCaseBudget    = 200 // the message of further cases (their details are dropped)
	maxCases           = 200 // cases kept on a report (failing ones first)
	failureFieldBudget = 500 // each text field of a stored diagnosed failure
	maxRoutedFailures  = 20  // failures sent to one fix or patch, and kept on the stored diagnosis
	historyBudget      = 128 << 10
	maxHistory         = 150 // messages
	keptHistoryHead    = 3   // the plan conversation is never dropped
	maxNotes           = 60
	maxStageRecords    = 300
	maxSeen            = 128
	maxTracks          = 50
	maxHints           = 10
	summaryTextBudget  = 300 // the prompt and error on a job's index line (summary.go)
	// The iteration log (iterations.go), kept beside the state in its
	// record: with the state and its result (600 KB at most,
	// TestStateAndPromptsStayBounded) the record stays under NATS's 1 MB
	// message limit.
	maxIterationRecords    = 8
	iterationLogBudget     = 192 << 10
	iterationCodeBudget    = 16 << 10 // the code and the tests of one iteration, each
	iterationOutputBudget  = 3000
	iterationCases         = 60
	iterationCaseBudget    = 300 // a case's message, a diagnosed failure's fields
	iterationDetailsBudget = 800
	iterationFailures      = 10
)

// trimReport bounds a test report for the state and for prompts: pytest's
// output to its head and tail, every failing case's message and traceback
// (the first detailedCases generously, the rest briefly), passing cases to
// their names, and at most maxCases cases. Counts are kept as they are.
func trimReport(r messages.TestReport) messages.TestReport {
	out := r
	out.Output = trim.Middle(r.Output, reportOutputBudget)
	out.Cases = nil
	failing := 0
	for _, c := range r.Cases {
		if protocol.Failing(c) {
			failing++
		}
	}
	room := max(0, maxCases-failing) // for passing and skipped cases
	detailed, kept := 0, 0
	for _, c := range r.Cases {
		if protocol.Failing(c) {
			if kept >= maxCases {
				continue
			}
			if detailed < detailedCases {
				c.Message, c.Details = trim.Middle(c.Message, caseMessageBudget), trim.Middle(c.Details, caseDetailsBudget)
				detailed++
			} else {
				c.Message, c.Details = trim.Middle(c.Message, briefCaseBudget), ""
			}
		} else {
			if room == 0 {
				continue
			}
			room--
			c.Message, c.Details = trim.Middle(c.Message, briefCaseBudget), ""
		}
		kept++
		out.Cases = append(out.Cases, c)
	}
	return out
}

func trimFailure(f messages.Failure) messages.Failure {
	t := func(s string) string { return trim.Middle(s, failureFieldBudget) }
	f.ErrorMessage, f.ExpectedBehavior, f.ActualBehavior = t(f.ErrorMessage), t(f.ExpectedBehavior), t(f.ActualBehavior)
	f.RootCause, f.SuggestedFix = t(f.RootCause), t(f.SuggestedFix)
	return f
}

func trimFailures(fs []messages.Failure) []messages.Failure {
	if fs == nil {
		return nil
	}
	out := make([]messages.Failure, len(fs))
	for i, f := range fs {
		out[i] = trimFailure(f)
	}
	return out
}

// trimDiagnosis bounds a diagnosis's texts (routing uses all its failures).
func trimDiagnosis(d messages.Diagnosis) messages.Diagnosis {
	if len(d.Failures) > maxCases {
		d.Failures = d.Failures[:maxCases]
	}
	d.Failures = trimFailures(d.Failures)
	return d
}

// storedDiagnosis is the part of a diagnosis kept on the state.
func storedDiagnosis(d messages.Diagnosis) *messages.Diagnosis {
	if len(d.Failures) > maxRoutedFailures {
		d.Failures = append([]messages.Failure(nil), d.Failures[:maxRoutedFailures]...)
	}
	return &d
}

func trimAll(ss []string, budget, n int) []string {
	var out []string
	for _, s := range ss {
		if len(out) == n {
			break
		}
		out = append(out, trim.Middle(s, budget))
	}
	return out
}

// appendHistory keeps the conversation on the state within historyBudget
// bytes and maxHistory messages. A system message identical to an earlier
// one is stored as a reference to it (every call of a stage sends the same
// rules). When the budget is exceeded the oldest messages after the plan
// conversation are dropped, and one marker says how many.
func (m *Stepper) appendHistory(ms []messages.ChatMessage) {
	s := m.s
	for _, msg := range ms {
		if msg.Role == "system" {
			msg.Content = systemRef(s.History, msg.Content)
		}
		s.History = append(s.History, msg)
	}
	s.History = boundHistory(s.History)
}

// systemRef is a system message's content, or a reference to the earlier
// system message with the same content.
func systemRef(history []messages.ChatMessage, content string) string {
	for _, h := range history {
		if h.Role == "system" && h.Content == content {
			return fmt.Sprintf("[the same system message as the earlier %s call]", h.Stage)
		}
	}
	return content
}

// boundHistory drops the oldest messages after the plan conversation
// beyond historyBudget bytes or maxHistory messages, and puts one marker
// in their place saying how many (an earlier marker's count included).
func boundHistory(h []messages.ChatMessage) []messages.ChatMessage {
	size := 0
	for _, msg := range h {
		size += len(msg.Content)
	}
	dropped := 0
	for (size > historyBudget || len(h) > maxHistory) && len(h) > keptHistoryHead+2 {
		i := keptHistoryHead
		if isDropMarker(h[i]) {
			dropped += markerCount(h[i])
		} else {
			dropped++
		}
		size -= len(h[i].Content)
		h = append(h[:i], h[i+1:]...)
	}
	if dropped == 0 {
		return h
	}
	marker := messages.ChatMessage{Role: "system", Content: fmt.Sprintf(dropMarkerFormat, dropped)}
	out := append([]messages.ChatMessage{}, h[:keptHistoryHead]...)
	out = append(out, marker)
	return append(out, h[keptHistoryHead:]...)
}

const dropMarkerSuffix = " earlier messages were dropped to keep the job state small]"

const dropMarkerFormat = "[%d" + dropMarkerSuffix

func isDropMarker(c messages.ChatMessage) bool {
	return c.Role == "system" && strings.HasPrefix(c.Content, "[") && strings.HasSuffix(c.Content, dropMarkerSuffix)
}

func markerCount(c messages.ChatMessage) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(c.Content, "["), dropMarkerSuffix))
	return n
}

// Note says why the job did what it did: the notes are on its result,
// the most recent maxNotes of them, each trimmed.
func (m *Stepper) Note(n string) {
	s := m.s
	s.Notes = append(s.Notes, trim.Middle(n, 600))
	if len(s.Notes) > maxNotes {
		s.Notes = append([]string(nil), s.Notes[len(s.Notes)-maxNotes:]...)
	}
}

// tokensUsed is the job's model tokens so far, against options.token_budget.
func tokensUsed(s *State) int { return s.Usage.InputTokens + s.Usage.OutputTokens }

// overBudget reports whether the job may not start another model call.
func overBudget(s *State) bool {
	b := s.Spec.Options.TokenBudget
	return b > 0 && tokensUsed(s) >= b
}

func joinShort(ss []string, n int) string {
	if len(ss) > n {
		return strings.Join(ss[:n], ", ") + fmt.Sprintf(" and %d more", len(ss)-n)
	}
	return strings.Join(ss, ", ")
}

// record counts a result's usage (per stage too), keeps its conversation and
// lists it on the result object, whatever becomes of it.
func (m *Stepper) record(p Pending, r *messages.StageResult) {
	s := m.s
	s.Usage = s.Usage.Add(r.Usage)
	if r.Usage != (messages.Usage{}) {
		if s.StageUsage == nil {
			s.StageUsage = map[messages.Stage]messages.Usage{}
		}
		s.StageUsage[r.Stage] = s.StageUsage[r.Stage].Add(r.Usage)
	}
	if r.Cached {
		s.CacheHits++
	}
	m.appendHistory(r.Messages)
	m.recordContext(p, r) // runvalidate.go
	outcome := outcomeOf(r)
	if p.Candidate > 0 {
		outcome = fmt.Sprintf("candidate %d: %s", p.Candidate, outcome)
	}
	if p.Orphan {
		outcome += " (ignored: another candidate passed first)"
	}
	s.Stages = append(s.Stages, messages.StageRecord{
		Name: r.Stage, Seq: r.Seq, Iteration: p.Iteration, StartedAt: r.StartedAt,
		DurationMS: r.DurationMS, Cached: r.Cached, Outcome: outcome, Usage: r.Usage, Worker: r.Worker,
	})
	if len(s.Stages) > maxStageRecords {
		s.Stages = append([]messages.StageRecord(nil), s.Stages[len(s.Stages)-maxStageRecords:]...)
	}
	m.emit(messages.Event{Type: messages.EventStageFinished, Stage: r.Stage, Seq: r.Seq,
		Iteration: p.Iteration, Cached: r.Cached, Outcome: outcome, Message: stageNote(r)}) // eventnote.go
}

// outcomeOf says in a few words what a stage result was: its error, a test
// run's counts, a script run's problems, or "ok".
func outcomeOf(r *messages.StageResult) string {
	if r.Error != "" {
		return "error: " + firstLine(r.Error)
	}
	switch r.Stage {
	case messages.StageRunTests:
		var rep messages.TestReport
		if json.Unmarshal(r.Output, &rep) == nil {
			return reportSummary(rep)
		}
	case messages.StageAcceptance, messages.StageRun:
		var out messages.AcceptanceOutput
		if json.Unmarshal(r.Output, &out) == nil && !out.OK {
			if len(out.Problems) == 0 {
				return "failed"
			}
			return "failed: " + firstLine(strings.Join(out.Problems, "; "))
		}
	}
	return "ok"
}
