// Package bwrap is the bubblewrap sandbox backend: it runs untrusted Python
// on the worker's own machine, each run in a fresh bubblewrap sandbox. It is
// the embedded default and is named "process" in configuration and logs
// (AUTOCODER_SANDBOX=process, Backend.Name).
//
//	b, err := bwrap.New(bwrap.Config{Python: "/usr/bin/python3", StateDir: dir, Logger: log})
//	if err != nil {
//		return err // the host cannot sandbox: the error says why (user namespaces, bwrap, python)
//	}
//	defer b.Close()
//	env, err := b.Build(ctx, sandbox.EnvSpec{Packages: []string{"pandas"}})
//	report, err := sandbox.RunTests(ctx, b, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests})
//
// # Environments
//
// Environments are virtual environments of the host's Python with its
// system site-packages, under StateDir/envs/<id>; packages the host already
// has (Debian's python3-pandas) are reused, the others installed by pip
// (index, wheelhouse or neither: see Config), which runs in a sandbox of its
// own with no network of its own and nothing else of the host: its only way
// out is a session of the worker's egress proxy (package egress), bound in
// as a Unix socket, which reaches the configured package sources and
// nothing else and keeps their credentials.
//
// # Runs
//
// A run sees /usr, a short list of /etc entries, the environment at
// /opt/venv, /workspace, /var/inputs, /var/outputs and tmpfs /tmp and
// /dev/shm, and nothing else: not the state dir, other runs, /root or the
// worker's environment variables. It has its own pid, network, IPC and UTS
// namespaces, no capabilities, no_new_privs, and rlimits on address space,
// processes, file size, open files and CPU time. Where a cgroup is usable
// (v2, or the v1 memory, cpu and pids hierarchies; the worker is root or
// has a delegated cgroup), each run also has a cgroup of its own that caps
// the sandbox as a whole: memory with no swap, a CPU quota of
// sandbox.RunSpec.CPUs, and a pids limit; it is removed after the run.
// Otherwise only the rlimits apply, which New logs once; Backend.Limits
// reports which are in force. When the worker is root, every run has its
// own unprivileged host uid, so that the process limit is per run (the
// kernel does not apply it to root); otherwise bubblewrap maps the worker's
// uid in a user namespace.
//
// # Files
//
// backend.go (New, host checks), config.go, build.go (environments),
// run.go (Run: run dir, inputs, collecting results), args.go (bubblewrap's
// options), exec.go (one bubblewrap invocation and its kill), cgroup.go,
// uidpool.go.
package bwrap
