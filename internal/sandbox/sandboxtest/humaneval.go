package sandboxtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/autocoder/autocoder/internal/problemset"
)

// HumanEval loads the 164 problems (problemset.DefaultPath) for the
// backends' benchmarks. Outside CI a missing dataset skips the test with
// how to get it; in CI it fails.
func HumanEval(t testing.TB) []problemset.Problem {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	path := problemset.DefaultPath(dir)
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("HumanEval dataset missing (%v): put HumanEval.jsonl in ../shared/datasets of the module root, "+
			"or set AUTOCODER_DATASETS to its directory", err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ps, err := problemset.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
