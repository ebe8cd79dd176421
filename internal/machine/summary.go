package machine

import (
	"sort"

	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// SummaryOf is the job's line in the job index: what a job list shows,
// without the code, reports and conversation of the full state.
func SummaryOf(s State) messages.JobSummary {
	sum := messages.JobSummary{
		V: messages.WireVersion, JobID: s.JobID, Name: s.Spec.Name, Status: s.Status, Phase: string(s.Phase),
		Prompt: trim.Middle(s.Spec.Prompt, summaryTextBudget), Error: trim.Middle(s.Error, summaryTextBudget),
		Iterations: s.Iteration, Tokens: tokensUsed(&s), LLMCalls: s.Usage.Calls, CacheHits: s.CacheHits,
		SubmittedAt: s.SubmittedAt, FinishedAt: s.FinishedAt,
	}
	seqs := make([]int, 0, len(s.Pending))
	for seq, p := range s.Pending {
		if !p.Orphan {
			seqs = append(seqs, seq)
		}
	}
	sort.Ints(seqs)
	for _, seq := range seqs {
		sum.Running = append(sum.Running, s.Pending[seq].Stage)
	}
	return sum
}

// RejectedSummary is the index line of a submission refused before it
// became a job: it has a result (the reason) and no state.
func RejectedSummary(res messages.Result) messages.JobSummary {
	return messages.JobSummary{
		V: messages.WireVersion, JobID: res.JobID, Status: res.Status, Phase: string(PhaseDone),
		Error: trim.Middle(res.Error, summaryTextBudget), SubmittedAt: res.SubmittedAt, FinishedAt: res.FinishedAt,
	}
}
