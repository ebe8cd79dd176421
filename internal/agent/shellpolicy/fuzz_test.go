package shellpolicy_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/agent/shellpolicy"
)

// FuzzCheck shows Check never panics and never allows a command with a reason.
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
		if !v.Allowed && v.Reason == "" {
			t.Fatalf("Check(%q) refused without a reason", command)
		}
	})
}
