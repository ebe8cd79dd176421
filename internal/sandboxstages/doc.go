// Package sandboxstages is the sandbox-worker's stage handlers: profile the
// samples, build an environment for a package set, run the tests, and run
// the script on the samples (the acceptance run) or on new data (a run),
// on any sandbox.Backend.
//
// The profile stage also hands on the constraints its parser could not
// read, with what the constraint LLM stage needs to render the data context
// and schemas again with the model's checks. With Config.Outputs, the
// files of File and Dir outputs are stored by content hash in the outputs
// object store (a Dir as its files plus a manifest), and each output's
// value names its object, for clients to download. Dir inputs arrive as
// tar archives and are unpacked for the run. Every run's timeout, memory
// and CPUs are capped at the worker's Ceilings, whatever the command asks
// for.
//
// With Config.Workspace, it also does the agent backend's tool calls
// (agent_tool, agent.go): the file tools on a temporary copy of the job's
// content-addressed workspace, confined by internal/agent/workspace, and
// bash after internal/agent/shellpolicy, inside the sandbox, with the
// workspace archived back when the command ends (agentbash.go).
//
// Built from a Config and registered on a stagework.Mux, as every stage
// package is; every stage's version names the backend:
//
//	h, err := sandboxstages.New(sandboxstages.Config{Backend: backend, Samples: store,
//		Outputs: sandboxstages.ObjectStoreOutputs{Obj: res.Outputs},
//		Ceilings: sandboxstages.Ceilings{Timeout: 30 * time.Minute, Memory: 8 << 30}})
//	if err != nil { ... }
//	h.Register(mux)
package sandboxstages
