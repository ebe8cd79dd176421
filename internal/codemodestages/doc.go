// Package codemodestages does the stages of code-mode jobs (Contract 8):
// codemode_turn on the llm-workers (one model reply, its program
// extracted), codemode_tools and codemode_exec on the sandbox-workers (the
// job's tools discovered over NATS by name; one program run in the
// Starlark interpreter of internal/codemode, with tool calls content-keyed
// in the worker's cache under the job's id). Built and registered like
// every stage package:
//
//	h, err := codemodestages.New(codemodestages.Config{Model: model, Conn: nc, Cache: c})
//	h.Register(mux) // a stagework.Mux; each pool's executor serves its own stages
package codemodestages
