// Package sandbox runs untrusted generated Python. Backend is the seam:
// the process backend isolates each run with bubblewrap (no network,
// read-only system, tmpfs /tmp, rlimits, a wall-clock kill of the whole tree)
// on the embedded default; the Docker backend (Docker Engine API or Podman's)
// serves fleets. RunTests and RunScript sit on top of any Backend and speak
// the script protocol (Contract 2): solution.py and test_solution.py in
// /workspace, samples read-only in /var/inputs, outputs in /var/outputs,
// results read from pytest's JUnit XML.
//
//	b, err := sandbox.NewProcess(sandbox.ProcessConfig{Python: "/usr/bin/python3", StateDir: dir})
//	env, err := b.Build(ctx, sandbox.EnvSpec{Packages: []string{"pandas"}})
//	report, err := sandbox.RunTests(ctx, b, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests})
package sandbox
