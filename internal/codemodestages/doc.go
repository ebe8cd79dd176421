// Package codemodestages does the stages of code-mode jobs (Contract 8):
// codemode_turn on the llm-workers (one model reply, its program
// extracted), codemode_tools and codemode_exec on the sandbox-workers (the
// job's tools discovered over NATS by name, aliases applied; one program
// run in CPython in the sandbox by internal/codemode/pyexec, or in
// Starlark with interpreter: starlark, with tool calls content-keyed in the
// worker's cache under the job's id; the files a Python program writes are
// stored in the outputs store). Built and registered like every stage
// package:
//
//	h, err := codemodestages.New(codemodestages.Config{Model: model, Conn: nc, Cache: c,
//		Python: &pyexec.Runner{Backend: backend}, Files: sandboxstages.ObjectStoreOutputs{Obj: outputs}})
//	h.Register(mux) // a stagework.Mux; each pool's executor serves its own stages
package codemodestages
