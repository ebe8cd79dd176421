// Package docker is the Docker Engine sandbox backend: environments are
// images built FROM a base image (python:3.12-slim by default, or any image
// with python3), and every run is a fresh hardened container. It speaks the
// Engine API with API version negotiation, so it works against Docker
// Engine and against Podman's Docker-compatible service
// (`podman system service`).
//
// A run's container has no network, a read-only root file system, uid
// 10001, no capabilities, no-new-privileges, pids, memory (no swap) and CPU
// limits, rlimits, a size-capped tmpfs /tmp, no environment but what the
// RunSpec declares, and an optional OCI runtime (runsc). Files travel through
// the archive API, so no host path is mounted and the engine may be remote.
// Its init process is a small stub that waits for the command on stdin,
// which lets a warm pool keep started containers for hot images.
//
// An environment build runs its trusted steps (the sandbox layout,
// Config.ExtraCommands, apt) as an image build, then pip in a container
// with no network, whose only way out is a session of the worker's egress
// proxy (package egress) bound in as a Unix socket; that container is
// committed as the image (pipbuild.go says why not a build step). Index
// credentials stay in the proxy, out of the image and its history.
//
// Every container is labelled with its worker, job and lease expiry; a
// reaper on any worker removes those whose lease is over. With a Cache,
// each backend also heartbeats there, and a reaper removes the containers
// (pooled ones included) of a backend whose heartbeat is gone, so a worker
// that dies leaves nothing behind after twice HeartbeatTTL plus ReapInterval.
//
//	b, err := docker.New(ctx, docker.Config{
//		BaseImage: "python:3.12-slim", // or autocoder-base:bookworm (scripts/setup-docker.sh)
//		Cache:     c,                  // a cache.Cache: one build per image across workers
//		Logger:    log,
//	})
//	if err != nil {
//		return err
//	}
//	defer b.Close()
//	env, err := b.Build(ctx, sandbox.EnvSpec{Packages: []string{"pandas"}})
//	report, err := sandbox.RunTests(ctx, b, sandbox.TestRun{Env: env.ID, Code: code, Tests: tests})
package docker
