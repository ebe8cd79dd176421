// Package sandboxtest is the conformance suite of sandbox.Backend: every
// backend runs it (Watermill's Pub/Sub tests, River's driver tests).
//
//	func TestConformance(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T) sandbox.Backend {
//			b, err := bwrap.New(bwrap.Config{StateDir: dir})
//			if err != nil {
//				t.Fatalf("process backend unavailable: %v", err) // never Skip
//			}
//			return b
//		})
//	}
//
// The suite covers the script protocol (RunTests, RunScript, /var/inputs,
// /var/outputs) and isolation: no network, no host files or worker
// environment, a read-only host and root (tried from inside too),
// no_new_privs, killed process trees, capped output, memory (one process
// and several that only together exceed the limit), a CPU quota (measured
// from inside), processes and /tmp; after each escape attempt the backend
// must serve the next run. It needs a base environment (Build with no
// packages) whose Python has pytest.
//
// Leftover processes are looked for in this host's /proc by a token in
// their command line; a backend whose sandboxes run elsewhere (a remote
// Docker engine) passes those checks vacuously.
package sandboxtest
