package main

import (
	"os"

	"github.com/autocoder/autocoder/internal/wiring"
)

func main() { os.Exit(wiring.Main(wiring.RoleLLMWorker)) }
