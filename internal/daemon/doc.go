// Package daemon runs one of the server binaries (coordinator, llm-worker,
// sandbox-worker) with its HTTP endpoint, so each main stays a few lines.
//
//	err := daemon.Run(ctx, daemon.Options{Role: daemon.RoleCoordinator, Config: cfg, Logger: log, Embedded: true})
package daemon
