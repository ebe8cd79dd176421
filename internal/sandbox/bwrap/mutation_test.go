package bwrap_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox/bwrap"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// TestMutation runs the mutation suite on every 16th HumanEval problem
// (every problem with -humaneval.all).
func TestMutation(t *testing.T) {
	problems := loadHumanEval(t)
	var some []humanEvalProblem
	for i, p := range problems {
		if *humanEvalAll || i%16 == 0 {
			some = append(some, p)
		}
	}
	sandboxtest.RunMutation(t, newBackend(t, bwrap.Config{}), some)
}
