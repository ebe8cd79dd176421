package sandbox

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizePackages(t *testing.T) {
	got, err := NormalizePackages([]string{"Pandas", "scikit_learn==1.3.0", "requests[Security,socks]>=2", "pandas", " numpy "})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"numpy", "pandas", "requests[security,socks]>=2", "scikit-learn==1.3.0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, err = NormalizePackages([]string{"ok", "https://x/y.whl", "../up", "a b", "pkg; rm -rf /", "-e."})
	var inv *InvalidPackageError
	if !errors.As(err, &inv) || !errors.Is(err, ErrInvalidPackage) {
		t.Fatalf("err = %v, want an *InvalidPackageError", err)
	}
	if diff := cmp.Diff([]string{"https://x/y.whl", "../up", "a b", "pkg; rm -rf /", "-e."}, inv.Packages); diff != "" {
		t.Errorf("invalid names (-want +got):\n%s", diff)
	}
}
