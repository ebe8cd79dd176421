// Command sandbox-worker is one of autocoder's server processes; see the README.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/daemon"
)

func main() {
	cfg := config.FromEnv()
	cfg.Register(flag.CommandLine)

	flag.Parse()
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Run(ctx, daemon.Options{Role: daemon.RoleSandboxWorker, Config: cfg, Logger: log}); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-worker:", err)
		os.Exit(1)
	}
}
