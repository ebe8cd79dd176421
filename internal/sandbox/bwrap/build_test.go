package bwrap

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/sandbox"
)

func TestClassifyPipFailure(t *testing.T) {
	const notFound = "ERROR: Could not find a version that satisfies the requirement %s (from versions: none)\n" +
		"ERROR: No matching distribution found for %s\n"
	tests := []struct {
		name      string
		requested []string
		log       string
		invalid   []string // nil: not an InvalidPackageError
		permanent bool     // wraps ErrBuildFailed
		contains  string
	}{
		{"not found", []string{"pandas", "nopkg"}, strings.ReplaceAll(notFound, "%s", "nopkg"), []string{"nopkg"}, false, ""},
		{"version not found", []string{"numpy>=999"}, strings.ReplaceAll(notFound, "%s", "numpy>=999"), []string{"numpy>=999"}, false, ""},
		{"normalized name", []string{"Foo_Bar"}, strings.ReplaceAll(notFound, "%s", "foo-bar"), []string{"Foo_Bar"}, false, ""},
		{"dependency not found", []string{"tool"}, strings.ReplaceAll(notFound, "%s", "libdep>=2"), []string{"libdep>=2"}, false, ""},
		{"404 is not found", []string{"nopkg"}, "Could not fetch URL https://pypi.org/simple/nopkg/: 404 Client Error: Not Found\n" +
			strings.ReplaceAll(notFound, "%s", "nopkg"), []string{"nopkg"}, false, ""},
		{"unreachable", []string{"nopkg"}, "Could not fetch URL http://127.0.0.1:9/simple/nopkg/: connection error: " +
			"HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded\n" + strings.ReplaceAll(notFound, "%s", "nopkg"),
			nil, false, "could not reach the package index"},
		{"dns", []string{"x"}, "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(': " +
			"Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')'\n", nil, false, "could not reach"},
		{"untrusted http index", []string{"x"}, "WARNING: The repository located at idx.local is not a trusted or secure host and is being ignored.\n" +
			strings.ReplaceAll(notFound, "%s", "x"), nil, false, "--trusted-host idx.local"},
		{"compile failure", []string{"pycairo"}, "error: subprocess-exited-with-error\n  × Building wheel for pycairo (pyproject.toml) did not run successfully.\n",
			nil, true, "pip install failed"},
		{"conflict", []string{"a==1", "b==2"}, "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/\n", nil, true, "ResolutionImpossible"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := classifyPipFailure("abc", tc.requested, tc.log, "build log")
			var inv *sandbox.InvalidPackageError
			if tc.invalid != nil {
				if !errors.As(err, &inv) {
					t.Fatalf("err = %v, want an *InvalidPackageError", err)
				}
				if diff := cmp.Diff(tc.invalid, inv.Packages); diff != "" {
					t.Errorf("packages (-want +got):\n%s", diff)
				}
				return
			}
			if errors.As(err, &inv) {
				t.Fatalf("err = %v, want no *InvalidPackageError", err)
			}
			if errors.Is(err, sandbox.ErrBuildFailed) != tc.permanent {
				t.Errorf("errors.Is(err, ErrBuildFailed) = %v, want %v (err %v)", !tc.permanent, tc.permanent, err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err = %v, want it to mention %q", err, tc.contains)
			}
		})
	}
}
