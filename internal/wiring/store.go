package wiring

import (
	"path/filepath"

	"github.com/autocoder/autocoder/internal/config"
)

// EmbeddedStoreDir is where the embedded NATS server keeps JetStream under
// cfg.StateDir: the jobs of --local runs. A client that finds none there
// has no deployment to look anything up in.
func EmbeddedStoreDir(cfg config.Config) string { return filepath.Join(cfg.StateDir, "jetstream") }
