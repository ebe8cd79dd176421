// Package codemodestages does the stages of code-mode jobs (Contract 8)
// for the worker pools: codemode_turn on the llm-workers (one model reply,
// its program extracted), codemode_tools and codemode_exec on the
// sandbox-workers (the job's tools discovered over NATS by name, aliases
// applied; one program run in CPython in the sandbox by
// internal/codemode/pyexec, or in Starlark with interpreter: starlark,
// with tool calls content-keyed in the worker's cache under the job's id;
// the files a Python program writes are stored in the outputs store). Wrap puts
// them in front of a pool's own handler:
//
//	h := codemodestages.Wrap(llmstages.NewStageHandler(...), codemodestages.Turn{Model: model})
//	h := codemodestages.Wrap(sandboxstages.New(...), &codemodestages.Exec{Conn: nc, Cache: c,
//		Python: &pyexec.Runner{Backend: backend}, Files: sandboxstages.ObjectStoreOutputs{Obj: outputs}})
package codemodestages
