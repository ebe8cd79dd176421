package main

import (
	"os"

	"github.com/autocoder/autocoder/internal/serve"
	"github.com/autocoder/autocoder/internal/stack"
)

func main() { os.Exit(serve.Main(stack.RoleSandboxWorker)) }
