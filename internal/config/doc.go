// Package config reads docs/contracts.md's Contract 6 settings from the environment and lets
// every binary override them with flags of the same meaning.
//
//	cfg := config.FromEnv()
//	cfg.Register(flag.CommandLine)
//	flag.Parse()
//	if err := cfg.Validate(); err != nil { ... }
package config
