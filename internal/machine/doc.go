// Package machine is the job state machine: Step(state, input) returns the
// next state and the commands to carry out (dispatch a stage, emit a progress
// event, finish the job). It does no I/O and reads no clock, so the
// coordinator's behaviour is tested here exhaustively and can be replayed
// from a recorded log of its inputs.
//
//	s, cmds := machine.Step(machine.State{}, machine.Input{Kind: machine.InputSubmitted, Time: now, Submit: sub})
//	for _, c := range cmds { ... publish c.Dispatch, c.Emit; store c.Finish ... }
//
// What each stage's result does is one table, at the top of results.go;
// every phase change goes through stepper.enter. A submission with a Rerun
// runs a finished job's script on new data instead (rerun.go).
//
// The loop: profile the samples, plan, then write the code and the tests
// concurrently (the tests depend on the plan, not the code). Packages come
// from a static import scan (the model maps only the imports the tables
// cannot), and the environment is built as soon as the code's packages are
// known, overlapping the test generation (advance, env.go). Then the tests
// run; failures are diagnosed, routed, repaired and verified (repair.go);
// a loop that stops making progress changes strategy or stops. With
// options.candidates several solutions race in the first round
// (candidates.go). Once the tests pass, their strength is measured by
// mutation, and weak tests are strengthened and run again before the
// acceptance run (strength.go). Every part of the state that grows with the job is
// bounded (budget.go), since the state is one KV value.
//
// With options.backend agent, the model drives the work instead: turns and
// tool calls, one stage each, with run_tests as the job's own test stage
// and the same acceptance run at the end (agent.go).
package machine
