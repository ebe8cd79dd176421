// Package machine is the job state machine: Step(state, event) returns the
// next state and the commands to carry out (dispatch a stage, emit a progress
// event, finish the job). It does no I/O and reads no clock, so the
// coordinator's behaviour is tested here exhaustively and can be replayed
// from a recorded event log.
//
//	s, cmds := machine.Step(machine.State{}, machine.Event{Kind: machine.EventSubmitted, Time: now, Submit: sub})
//	for _, c := range cmds { ... publish c.Dispatch, c.Emit; store c.Finish ... }
package machine
