package docker_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/autocoder/autocoder/internal/problemset"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// TestDockerMutation runs the mutation suite in containers, on every 41st
// HumanEval problem.
func TestDockerMutation(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	path := problemset.DefaultPath(dir)
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("HumanEval dataset missing (%v): set AUTOCODER_DATASETS to its directory", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ps, err := problemset.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var some []problemset.Problem
	for i := 0; i < len(ps); i += 41 {
		some = append(some, ps[i])
	}
	sandboxtest.RunMutation(t, newBackend(t, testConfig(t)), some)
}
