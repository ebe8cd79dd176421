package machine

import "github.com/autocoder/autocoder/pkg/messages"

// ResultOf builds the result object (Contract 5 (docs/contracts.md)) from a state, finished or not.
func ResultOf(s State) messages.Result {
	r := messages.Result{
		V: messages.WireVersion, JobID: s.JobID, Status: s.Status,
		Success: s.Status == messages.StatusSucceeded, Attempts: s.Iteration,
		Plan: s.Plan, Solution: s.Solution, Error: s.Error, Image: s.Image,
		DetectedPackages: nonNil(s.Packages), DetectedSystemPackages: nonNil(s.SystemPackages),
		GeneratedSchemas: s.GeneratedSchemas, DataContext: s.DataContext,
		TotalInputTokens: s.Usage.InputTokens, TotalOutputTokens: s.Usage.OutputTokens,
		LLMCalls: s.Usage.Calls, CacheHits: s.CacheHits, Stages: s.Stages,
		ConversationHistory: s.History, SkippedTests: s.Spec.Options.SkipTests,
		SubmittedAt: s.SubmittedAt, FinishedAt: s.FinishedAt,
		UsageByStage: s.StageUsage, Notes: s.Notes, ContextUsed: s.ContextUsed, CodeMode: codeModeResult(s),
		Cancelled: s.Cancelled, OriginalSamples: originalSamples(s), // settings.go
		TotalCost: s.Usage.Cost, CostByModel: costByModel(s),
	}
	spec := s.Spec
	r.Spec = &spec
	if s.Tests != nil {
		r.Tests = s.Tests.Code
	}
	if s.LastReport != nil {
		r.Output = s.LastReport.Output
		r.ExitCode = s.LastReport.ExitCode
	}
	if s.Acceptance != nil {
		r.Outputs = s.Acceptance.Outputs
		if !s.Acceptance.OK || s.Spec.Options.ValidatesByRun() { // the code runner keeps what its run printed
			r.Output = s.Acceptance.Output
			r.ExitCode = s.Acceptance.ExitCode
		}
	}
	if r.Outputs == nil {
		r.Outputs = map[string]any{}
	}
	if r.Stages == nil {
		r.Stages = []messages.StageRecord{}
	}
	if r.ConversationHistory == nil {
		r.ConversationHistory = []messages.ChatMessage{}
	}
	if r.GeneratedSchemas == nil {
		r.GeneratedSchemas = map[string]string{}
	}
	agentResult(s, &r) // agent.go
	return r
}

// ---- small pure helpers ----
