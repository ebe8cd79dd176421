package cache_test

import (
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
)

// TestFailedRunsKnowTheirEnvironment: a failure counts against a next run
// only if the failed run had every package the next one will have; entries of older workers, which recorded no
// environment, still count; a value that is not a failure record claims
// nothing.
func TestFailedRunsKnowTheirEnvironment(t *testing.T) {
	t.Parallel()
	dir, err := cache.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	f := cache.FailedRuns{Cache: dir, TTL: time.Hour}
	const tests = "def test_x(): pass\n"
	if err := f.Remember(t.Context(), "a", tests, cache.RunEnv{Packages: []string{"numpy", "scikit-learn"}, SystemPackages: []string{"ffmpeg"}}); err != nil {
		t.Fatal(err)
	}
	if err := dir.Set(t.Context(), cache.FailedRunKey("legacy", tests), []byte("failed"), 0); err != nil {
		t.Fatal(err)
	}
	if err := dir.Set(t.Context(), cache.FailedRunKey("garbage", tests), []byte("{not json"), 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, code string
		env        cache.RunEnv
		want       bool
	}{
		{"same packages", "a", cache.RunEnv{Packages: []string{"numpy", "scikit-learn"}, SystemPackages: []string{"ffmpeg"}}, true},
		{"fewer packages", "a", cache.RunEnv{Packages: []string{"numpy"}}, true},
		{"a package the failed run lacked", "a", cache.RunEnv{Packages: []string{"numpy", "pandas"}}, false},
		{"a system package the failed run lacked", "a", cache.RunEnv{SystemPackages: []string{"ffmpeg", "graphviz"}}, false},
		{"other code", "b", cache.RunEnv{}, false},
		{"an older worker's entry", "legacy", cache.RunEnv{Packages: []string{"pandas"}}, true},
		{"not a failure record", "garbage", cache.RunEnv{}, false},
	} {
		got, err := f.Failed(t.Context(), tc.code, tests, tc.env)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: Failed = %v, want %v", tc.name, got, tc.want)
		}
	}
	var none cache.FailedRuns
	if got, err := none.Failed(t.Context(), "a", tests, cache.RunEnv{}); got || err != nil {
		t.Errorf("the zero FailedRuns: %v, %v; want false, nil", got, err)
	}
}
