package shellpolicy_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/agent/shellpolicy"
)

// FuzzCheck shows Check never panics, gives a reason exactly when it refuses,
// and never marks a refused command as a test stage.
// The seeds are the table's commands plus the checked-in corpus in testdata/fuzz.
func FuzzCheck(f *testing.F) {
	for _, tc := range verdictCases {
		f.Add(tc.command)
	}
	f.Fuzz(func(t *testing.T, command string) {
		v := shellpolicy.Check(command)
		if v.Allowed && v.Reason != "" {
			t.Fatalf("Check(%q) allowed with reason %q", command, v.Reason)
		}
		if !v.Allowed && (v.Reason == "" || v.Pytest) {
			t.Fatalf("Check(%q) refused with reason %q and Pytest %v; want a reason and no test stage", command, v.Reason, v.Pytest)
		}
	})
}
