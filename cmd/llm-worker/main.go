package main

import (
	"os"

	"github.com/autocoder/autocoder/internal/daemon"
)

func main() { os.Exit(daemon.Main(daemon.RoleLLMWorker)) }
