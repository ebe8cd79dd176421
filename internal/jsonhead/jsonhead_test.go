package jsonhead

import (
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	type head struct {
		phase   string
		pending map[int]string
	}
	read := func(doc string) (head, bool) {
		var h head
		ok := Fields([]byte(doc), "state", map[string]any{"phase": &h.phase, "pending": &h.pending})
		return h, ok
	}
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"both, in order", `{"state":{"job_id":"j","phase":"running","pending":{"3":"code"},"code":"x"},"outbox":[]}`, true},
		{"both, the other order", `{"state":{"pending":{"3":"code"},"phase":"running"}}`, true},
		{"a member missing", `{"state":{"phase":"running"}}`, false},
		{"another first key", `{"outbox":[],"state":{"phase":"running","pending":{"3":"code"}}}`, false},
		{"not an object", `["state"]`, false},
		{"a value that does not decode", `{"state":{"phase":3,"pending":{"3":"code"}}}`, false},
		{"cut short", `{"state":{"phase":"running","pend`, false},
		{"empty", ``, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := read(tc.doc)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && (h.phase != "running" || h.pending[3] != "code") {
				t.Errorf("read %+v", h)
			}
		})
	}
}

// TestFieldsStopsAtTheLastField: what follows the fields it needs is not
// read, so a record cut after them (or broken there) still gives them.
func TestFieldsStopsAtTheLastField(t *testing.T) {
	var phase string
	doc := `{"state":{"phase":"running","code":"` + strings.Repeat("x", 1<<20) + ` <broken`
	if !Fields([]byte(doc), "state", map[string]any{"phase": &phase}) || phase != "running" {
		t.Fatalf("phase %q", phase)
	}
}
