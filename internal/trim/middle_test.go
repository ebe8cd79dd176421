package trim

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMiddle(t *testing.T) {
	t.Parallel()
	if got := Middle("short", 10); got != "short" {
		t.Errorf("Middle short = %q", got)
	}
	if got := Middle("unbounded", 0); got != "unbounded" {
		t.Errorf("Middle with no budget = %q", got)
	}
	s := "HEAD" + strings.Repeat("é", 5000) + "TAIL"
	got := Middle(s, 1000)
	if !strings.HasPrefix(got, "HEAD") || !strings.HasSuffix(got, "TAIL") || !strings.Contains(got, "bytes trimmed") {
		t.Errorf("Middle lost head, tail or marker: %q", got)
	}
	if len(got) > 1000+50 {
		t.Errorf("Middle result is %d bytes, want about 1000", len(got))
	}
	if !utf8.ValidString(got) {
		t.Error("Middle split a rune")
	}
}
