// Command llm-worker is one of autocoder's server processes; see the README.
package main

import (
	"os"

	"github.com/autocoder/autocoder/internal/daemon"
)

func main() { os.Exit(daemon.Main(daemon.RoleLLMWorker)) }
