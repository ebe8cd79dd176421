// Package sandbox runs untrusted generated Python. Backend is the seam:
// the process backend isolates each run with bubblewrap (no network,
// read-only system, tmpfs /tmp, rlimits, a wall-clock kill of the whole tree)
// on the embedded default; the Docker backend (Docker Engine API or Podman's)
// serves fleets. RunTests and RunScript sit on top of any Backend and speak
// the script protocol (Contract 2 (docs/contracts.md)): solution.py and test_solution.py in
// /workspace, samples read-only in /var/inputs, outputs in /var/outputs,
// results read from pytest's JUnit XML.
//
//	b, err := sandbox.NewProcess(sandbox.ProcessConfig{Python: "/usr/bin/python3", StateDir: dir})
//	env, err := b.Build(ctx, sandbox.EnvSpec{Packages: []string{"pandas"}})
//	report, err := sandbox.RunTests(ctx, b, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests})
//	out, err := sandbox.RunScript(ctx, b, sandbox.ScriptRun{Env: env.ID, Code: code,
//		Args: map[string]string{"threshold": "0.5"}, Inputs: map[string]string{"sales.csv": path},
//		Outputs: map[string]messages.Type{"total": messages.TypeFloat}})
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
//
// # The process backend
//
// Environments are virtual environments of the host's Python with its
// system site-packages, under StateDir/envs/<id>; packages the host already
// has (Debian's python3-pandas) are reused, the others installed by pip
// (index, wheelhouse or neither: see ProcessConfig), which runs in a
// sandbox of its own that has the network and nothing else of the host.
//
// A run sees /usr, a short list of /etc entries, the environment at
// /opt/venv, /workspace, /var/inputs, /var/outputs and tmpfs /tmp and
// /dev/shm, and nothing else: not the state dir, other runs, /root or the
// worker's environment variables. It has its own pid, network, IPC and UTS
// namespaces, no capabilities, no_new_privs, and rlimits on address space,
// processes, file size, open files and CPU time. Where a cgroup is usable
// (v2, or the v1 memory, cpu and pids hierarchies; the worker is root or
// has a delegated cgroup), each run also has a cgroup of its own that caps
// the sandbox as a whole: memory with no swap, a CPU quota of RunSpec.CPUs,
// and a pids limit; it is removed after the run. Otherwise only the
// rlimits apply, which NewProcess logs once; Process.Limits reports which
// are in force. When the worker is root, every run
// has its own unprivileged host uid, so that the process limit is per run
// (the kernel does not apply it to root); otherwise bubblewrap maps the
// worker's uid in a user namespace.
package sandbox
