package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/evaluate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fi, _ := os.Stderr.Stat()
	terminal := fi != nil && fi.Mode()&os.ModeCharDevice != 0
	cfg, err := evaluate.ParseArgs(os.Args[1:], config.FromEnv(), os.Stderr, terminal)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return
	case err != nil:
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if _, err := evaluate.Run(ctx, cfg, log, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		stop()
		os.Exit(3)
	}
}
