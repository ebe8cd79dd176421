package client_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

// TestWriteOutput: a File output streams its content, a Dir output comes
// as a tar of its manifest's files under its name, a scalar or unknown
// name is ErrNoOutput, and a forged name is refused before anything is
// written.
func TestWriteOutput(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	report := []byte("total: 42\n")
	reportRef := s.putObject(report)
	sum, _ := messages.ParseObjectRef(reportRef)
	m, _ := json.Marshal(sandbox.DirManifest{Dirs: []string{"sub"}, Files: []sandbox.ManifestFile{{Path: "sub/r.txt", Size: int64(len(report)), SHA256: sum.SHA256}}})
	dirRef := s.putObject(m)
	res := &messages.Result{
		Spec:    &messages.JobSpec{Outputs: map[string]messages.Type{"report": messages.TypeFile, "charts": messages.TypeDir, "n": messages.TypeInt}},
		Outputs: map[string]any{"report": map[string]any{"object": reportRef}, "charts": map[string]any{"object": dirRef}, "n": 3},
	}
	write := func(name string) (messages.Type, []byte, error) {
		var kind messages.Type
		var buf bytes.Buffer
		err := s.client.WriteOutput(ctxT(t), res, name, func(k messages.Type) { kind = k }, &buf)
		return kind, buf.Bytes(), err
	}
	kind, b, err := write("report")
	if err != nil || kind != messages.TypeFile || !bytes.Equal(b, report) {
		t.Errorf("report: %s %q %v", kind, b, err)
	}
	kind, b, err = write("charts")
	if err != nil || kind != messages.TypeDir {
		t.Fatalf("charts: %s %v", kind, err)
	}
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		content, _ := io.ReadAll(tr)
		names = append(names, h.Name+"="+strings.TrimSpace(string(content)))
	}
	if diff := cmp.Diff([]string{"charts/sub/=", "charts/sub/r.txt=total: 42"}, names); diff != "" {
		t.Errorf("the Dir's tar (-want +got):\n%s", diff)
	}
	for _, name := range []string{"n", "missing"} {
		if _, _, err := write(name); !errors.Is(err, client.ErrNoOutput) {
			t.Errorf("%s: err = %v, want ErrNoOutput", name, err)
		}
	}
	res.Spec.Outputs["../x"] = messages.TypeFile
	res.Outputs["../x"] = map[string]any{"object": reportRef}
	if kind, b, err := write("report"); err == nil || kind != "" || len(b) != 0 {
		t.Errorf("a result with a forged name: %s, %d bytes, %v", kind, len(b), err)
	}
}
