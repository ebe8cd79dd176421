package messages_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
)

// TestBuildOutputProvenanceIsAdditive: an output without provenance
// encodes as before, and one with it decodes in a reader that predates it.
func TestBuildOutputProvenanceIsAdditive(t *testing.T) {
	data, err := json.Marshal(messages.BuildOutput{Image: "env"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "provenance") {
		t.Errorf("no provenance encodes as %s", data)
	}
	with := messages.BuildOutput{Image: "env", Provenance: []messages.Artifact{{URL: "http://idx/x.whl", SHA256: "ab", Bytes: 2}}}
	data, err = json.Marshal(with)
	if err != nil {
		t.Fatal(err)
	}
	var old struct {
		Image string `json:"image"`
	}
	if err := json.Unmarshal(data, &old); err != nil || old.Image != "env" {
		t.Errorf("an older reader got %+v, %v", old, err)
	}
	var back messages.BuildOutput
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(with, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
