package jobfile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/autocoder/autocoder/pkg/messages"
)

// FuzzDecodeRoundTrip: a YAML or JSON job file gives a valid spec or a
// *messages.FieldError, never a panic (YAML aliases, deep nesting and
// odd keys included); a spec that decodes survives a JSON round trip.
// The seeds are the examples' job files and the corpus in testdata/fuzz.
func FuzzDecodeRoundTrip(f *testing.F) {
	examples, _ := filepath.Glob("../../examples/*/job.yaml")
	for _, p := range examples {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("prompt: p\noutputs: {a: int}\noptions: {timeout: 90s}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("prompt: p\n1: 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := Decode(data)
		if err != nil {
			var fe *messages.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FieldError", err, err)
			}
			return
		}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("marshal a decoded spec: %v", err)
		}
		if _, err := Decode(b); err != nil {
			t.Fatalf("a decoded spec re-encoded does not decode: %v\n%s", err, b)
		}
	})
}
