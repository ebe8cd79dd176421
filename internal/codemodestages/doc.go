// Package codemodestages does the stages of code-mode jobs (Contract 8)
// for the worker pools: codemode_turn on the llm-workers (one model reply,
// its program extracted), codemode_tools and codemode_exec on the
// sandbox-workers (the job's tools discovered over NATS by name; one
// program run in the Starlark interpreter of internal/codemode, with tool
// calls content-keyed in the worker's cache under the job's id). Wrap puts
// them in front of a pool's own handler:
//
//	h := codemodestages.Wrap(llmstages.NewStageHandler(...), codemodestages.Turn{Model: model})
//	h := codemodestages.Wrap(sandboxstages.New(...), &codemodestages.Exec{Conn: nc, Cache: c})
package codemodestages
