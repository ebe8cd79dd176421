// Command coordinator is one of autocoder's server processes; see the README.
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
	embedded := flag.Bool("embedded", false, "host an embedded NATS server on AUTOCODER_NATS_LISTEN for other processes")
	flag.Parse()
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Run(ctx, daemon.Options{Role: daemon.RoleCoordinator, Config: cfg, Logger: log, Embedded: *embedded}); err != nil {
		fmt.Fprintln(os.Stderr, "coordinator:", err)
		os.Exit(1)
	}
}
