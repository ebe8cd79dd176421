package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/pkg/cache"
)

// OpenBackend opens the sandbox backend the configuration asks for
// (Contract 6 (docs/contracts.md)): AUTOCODER_SANDBOX=docker or process; unset, docker when an
// engine answers at DOCKER_HOST within a second, else process. c (may be
// nil) holds the docker backend's cross-worker build lock.
func OpenBackend(ctx context.Context, cfg config.Config, log *slog.Logger, c cache.Cache) (sandbox.Backend, error) {
	log = log.With("component", "sandbox")
	switch cfg.Sandbox {
	case "process":
		return openProcess(cfg, log)
	case "docker":
		return openDocker(ctx, cfg, log, c)
	case "":
	default:
		return nil, fmt.Errorf("sandbox backend %q is not docker or process", cfg.Sandbox)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	pingErr := docker.Ping(pctx, cfg.DockerHost)
	cancel()
	if pingErr == nil {
		b, err := openDocker(ctx, cfg, log, c)
		if err == nil {
			return b, nil
		}
		log.Warn("a Docker engine answers but the docker sandbox cannot start; using the process sandbox", "err", err)
		pingErr = err
	}
	b, err := openProcess(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("no sandbox backend can run here: docker: %v; process: %w "+
			"(install bubblewrap, and pytest for %s: scripts/quickstart.sh does it on Debian; "+
			"or start Docker or podman system service and set DOCKER_HOST: docs/docker.md)", pingErr, err, cfg.Python)
	}
	log.Info("sandbox backend: process", "docker", pingErr.Error())
	return b, nil
}

func openProcess(cfg config.Config, log *slog.Logger) (sandbox.Backend, error) {
	b, err := bwrap.New(bwrap.Config{Python: cfg.Python, StateDir: cfg.StateDir,
		PipIndexURL: cfg.PipIndexURL, PipFindLinks: cfg.FindLinks(), Logger: log})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return b, nil
}

func openDocker(ctx context.Context, cfg config.Config, log *slog.Logger, c cache.Cache) (sandbox.Backend, error) {
	b, err := docker.New(ctx, docker.Config{Host: cfg.DockerHost, BaseImage: cfg.DockerBaseImage, Runtime: cfg.DockerRuntime,
		Worker: cfg.WorkerName, Cache: c, PipIndexURL: cfg.PipIndexURL, PipFindLinks: cfg.FindLinks(),
		PoolSize: cfg.DockerPoolSize, ExtraCommands: cfg.DockerExtra(), BuildNetwork: cfg.DockerBuildNetwork, Logger: log})
	if err != nil {
		return nil, err
	}
	return b, nil
}
