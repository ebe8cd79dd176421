package machine

import (
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
func (m *stepper) appendHistory(ms []messages.ChatMessage) {
	s := m.s
	for _, msg := range ms {
		if msg.Role == "system" {
			for _, h := range s.History {
				if h.Role == "system" && h.Content == msg.Content {
					msg.Content = fmt.Sprintf("[the same system message as the earlier %s call]", h.Stage)
					break
				}
			}
		}
		s.History = append(s.History, msg)
	}
	size := 0
	for _, h := range s.History {
		size += len(h.Content)
	}
	dropped := 0
	for (size > historyBudget || len(s.History) > maxHistory) && len(s.History) > keptHistoryHead+2 {
		i := keptHistoryHead
		if isDropMarker(s.History[i]) {
			dropped += markerCount(s.History[i])
			size -= len(s.History[i].Content)
			s.History = append(s.History[:i], s.History[i+1:]...)
			continue
		}
		size -= len(s.History[i].Content)
		s.History = append(s.History[:i], s.History[i+1:]...)
		dropped++
	}
	if dropped > 0 {
		marker := messages.ChatMessage{Role: "system", Content: fmt.Sprintf(dropMarkerFormat, dropped)}
		h := append([]messages.ChatMessage{}, s.History[:keptHistoryHead]...)
		h = append(h, marker)
		s.History = append(h, s.History[keptHistoryHead:]...)
	}
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

func (m *stepper) note(n string) {
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
