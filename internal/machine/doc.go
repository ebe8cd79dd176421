// Package machine is the job state machine: Step(state, input) returns the
// next state and the commands to carry out (dispatch a stage, emit a progress
// event, finish the job). It does no I/O and reads no clock, so the
// coordinator's behaviour is tested here exhaustively and can be replayed
// from a recorded log of its inputs.
//
//	s, cmds := machine.Step(machine.State{}, machine.Input{Kind: machine.InputSubmitted, Time: now, Submit: sub})
//	for _, c := range cmds { ... publish c.Dispatch, c.Emit; store c.Finish ... }
//
// Each kind of job is a Kind value, in its own file: the pipeline
// (pipeline.go), the code runner (coderunner.go), the agent backend
// (agent.go), code mode (codemode.go) and the rerun (rerun.go). A kind says
// which submissions are its own, how its jobs start, what each of its
// stages' results does (its result table, one row per stage: On) and which
// phase changes it may make (Phases; every phase and repair status is
// declared in phases.go, and Enter checks each change). A job's kind is
// chosen once, from its submission; every result goes through that kind's
// table only. Where kinds share steps (the code runner and the agent build
// their environment, validate and replace packages, and run the acceptance
// as the pipeline does) their tables name the same functions.
//
// A Machine is a set of kinds (New); Step uses the built-in ones
// (Builtin). A kind may be defined outside the package, with stages of its
// own: it acts on its job through the Stepper (Enter, Dispatch, Note,
// Finish).
//
// The shared steps: packages come from a static import scan (the model
// maps only the imports the tables cannot) and the environment is built as
// soon as the code's packages are known (env.go, replace.go); failing tests
// are diagnosed, routed, repaired and verified (repair.go, verify.go); a
// loop that stops making progress changes strategy or stops; with
// options.candidates several solutions race in the first round
// (candidates.go). Every part of the state that grows with the job is
// bounded (budget.go), since the state is one KV value.
package machine
