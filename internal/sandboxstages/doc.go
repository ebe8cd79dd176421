// Package sandboxstages is the sandbox-worker's stage handlers: profile the
// samples, build an environment for a package set, run the tests, and run
// the script on the samples (the acceptance run), on any sandbox.Backend.
//
//	h := sandboxstages.New(backend, sampleStore)
//	runner, _ := stagework.NewRunner(stagework.Config{Handler: h, Publisher: pub, Cache: c})
package sandboxstages
