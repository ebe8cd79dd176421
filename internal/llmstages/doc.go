// Package llmstages is the llm-worker's stage logic: for each LLM stage
// (plan, code, tests, packages, diagnose, fix, patch_tests, verify) it
// decodes the command's input, builds the prompt (internal/prompts), makes
// one structured call through an llm.Client and normalises the reply into
// the stage's output struct (pkg/messages), so the coordinator can rely on
// its shape: Python only, valid package names, a diagnosis that covers
// every failing test, test patches already spliced into the test file.
// The agent backend's agent_turn is one tool-calling turn instead
// (agent.go): the conversation and Contract 7's tools, through a client
// that implements ChatClient.
//
//	h := llmstages.New(client, llmstages.Options{Logger: logger})
//	out, err := h.Handle(ctx, cmd)
//	switch {
//	case errors.Is(err, llmstages.ErrBadInput):
//		// permanent: retrying the same command cannot help
//	case err != nil:
//		// the model call failed (retry or infra error)
//	}
//	output, _ := json.Marshal(out.Value) // StageResult.Output
//
// Stages that need no model (a passing report, unchanged code, imports the
// static tables resolve) return without a call. StageVersion belongs in each
// stage's cache key.
package llmstages
