// Package protocol is the script protocol (Contract 2 in docs/contracts.md)
// in one place: the names of the generated files and of the directories a
// script reads and writes, how a sample or input becomes a path and an
// option, how a pytest case is named and when it counts as failing, and
// the canonical form of a package name. (Long texts are kept to a budget
// by internal/trim.)
//
// It has no I/O and imports only pkg/messages, so the state machine, the
// prompts, the stages and the sandbox can all share it.
//
//	argv := []string{"python", protocol.SolutionFile}
//	for name, file := range samples {
//		argv = append(argv, protocol.Option(name), protocol.InputPath(file))
//	}
//	id := protocol.TestID(c)            // "TestX::test_y[1]"
//	key := protocol.CanonicalName("A.B-c") // "a-b-c"
package protocol
