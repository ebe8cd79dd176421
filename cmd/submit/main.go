package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/submit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fi, _ := os.Stderr.Stat()
	terminal := fi != nil && fi.Mode()&os.ModeCharDevice != 0
	code := submit.Run(ctx, os.Args[1:], config.FromEnv(), submit.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Terminal: terminal})
	stop()
	os.Exit(code)
}
