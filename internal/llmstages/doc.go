// Package llmstages is the llm-worker's stage logic: for each LLM stage
// (plan, code, tests, packages, diagnose, fix, patch_tests, verify,
// constraint, package_replacement) a typed handler that builds the prompt
// (internal/prompts), makes one structured call through an llm.Client and
// normalises the reply into the stage's output struct (pkg/messages), so
// the coordinator can rely on its shape: Python only, valid package names,
// a diagnosis that covers every failing test, test patches already
// spliced into the test file. The agent backend's agent_turn is one
// tool-calling turn instead (agent.go), through a client that implements
// ChatClient.
//
// Handlers are built from a Config and registered on a stagework.Mux, as
// every stage package is; each registration names what shapes the stage's
// output besides its code (prompts, scan tables, the reply's schema, the
// documentation budgets), which is part of its cache key:
//
//	h, err := llmstages.New(llmstages.Config{Client: client, Logger: logger})
//	if err != nil { ... }
//	h.Register(mux)
//
// Input a stage cannot use fails permanently (ErrBadInput, bus.Permanent);
// the model's errors go to the executor as they are, and its failure
// policy classifies them (llm.Classify). Stages that need no model (a
// passing report, unchanged code, imports the static tables resolve)
// return without a call.
package llmstages
