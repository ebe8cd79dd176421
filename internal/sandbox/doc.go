// Package sandbox runs untrusted generated Python. Backend is the seam,
// with two implementations in packages of their own: bwrap (bubblewrap,
// one machine, the embedded default; named "process" in configuration) and
// docker (Docker Engine API or Podman's, for fleets). RunTests and
// RunScript sit on top of any Backend and speak the script protocol
// (Contract 2 (docs/contracts.md)): solution.py and test_solution.py in
// /workspace, samples read-only in /var/inputs, outputs in /var/outputs,
// results read from pytest's JUnit XML.
//
//	b, err := bwrap.New(bwrap.Config{Python: "/usr/bin/python3", StateDir: dir})
//	env, err := b.Build(ctx, sandbox.EnvSpec{Packages: []string{"pandas"}})
//	report, err := sandbox.RunTests(ctx, b, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests})
//	out, err := sandbox.RunScript(ctx, b, sandbox.ScriptRun{Env: env.ID, Code: code,
//		Args: map[string]string{"threshold": "0.5"}, Inputs: map[string]string{"sales.csv": path},
//		Outputs: map[string]messages.Type{"total": messages.TypeFloat}})
//
// This package holds only what every backend shares: the Backend
// interface and its types (RunSpec, its defaults and Validate), the errors,
// package-name normalising (NormalizePackages), one-build-per-key
// (BuildGroup), output capture (trim.Buffer), and the harness that turns
// a run into a report. sandboxtest is the conformance and escape suite
// every backend runs.
//
// # Errors
//
// A failing test, a crashing script, a timeout or a missing output is a
// result, never an error. Errors are for the infrastructure (the sandbox
// could not run, the context ended) and for builds: *InvalidPackageError
// (ErrInvalidPackage) names packages that are not valid names or that the
// index does not have, ErrBuildFailed marks builds that retrying cannot fix,
// ErrEnvNotFound an environment this backend never built, and anything
// else (an unreachable index) may succeed when retried.
package sandbox
