package sandboxstages_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/internal/profile"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandboxstages"
	"github.com/autocoder/autocoder/pkg/messages"
)

// memOutputs is an OutputStore in memory.
type memOutputs struct {
	mu   sync.Mutex
	objs map[string][]byte
	puts int
}

func (m *memOutputs) Put(_ context.Context, h string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil {
		m.objs = map[string][]byte{}
	}
	m.puts++
	m.objs[h] = append([]byte(nil), data...)
	return nil
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestProfileHandsUnparsedConstraintsOn(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "sales.csv")
	if err := os.WriteFile(p, []byte("region,price\nnorth,2.5\nsouth,30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newStages(t, sandboxstages.Config{Backend: &fakeBackend{}, Samples: &fetcher{paths: map[string]string{"sales.csv": p}}})
	in := messages.ProfileInput{Samples: []messages.SampleRef{salesRef}, Constraints: []string{"price must be positive", "prices are sane"}}
	out, err := h.Handle(ctxT(t), command(t, messages.StageProfile, in))
	if err != nil {
		t.Fatal(err)
	}
	po := value[messages.ProfileOutput](t, out)
	if diff := cmp.Diff([]string{"prices are sane"}, po.Unparsed); diff != "" {
		t.Errorf("unparsed (-want +got):\n%s", diff)
	}
	want := []messages.DataColumn{{Sample: "sales", Name: "region", Type: "string"}, {Sample: "sales", Name: "price", Type: "float"}}
	if diff := cmp.Diff(want, po.Columns); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	var rd profile.Rendition
	if err := json.Unmarshal(po.Render, &rd); err != nil {
		t.Fatal(err)
	}
	if rd.DataContext() != po.DataContext || rd.PanderaSchemas()["sales"] != po.GeneratedSchemas["sales"] {
		t.Error("the rendition does not render to the stage's own text")
	}
	// Everything parsed: nothing to hand on.
	in.Constraints = in.Constraints[:1]
	out, err = h.Handle(ctxT(t), command(t, messages.StageProfile, in))
	if err != nil {
		t.Fatal(err)
	}
	if po := value[messages.ProfileOutput](t, out); po.Unparsed != nil || po.Render != nil || po.Columns != nil {
		t.Errorf("output %+v carries constraint-stage input with nothing unparsed", po)
	}
}

func TestRunStoresFileAndDirOutputs(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{
		"report":               []byte("region,amount\nnorth,1\n"),
		"charts/a.txt":         []byte("1"),
		"charts/sub/b.txt":     []byte("22"),
		"total":                []byte("3.5"),
		"chartsnot/other.file": []byte("not in charts"),
	}
	b := &fakeBackend{run: func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		return sandbox.RunResult{Outputs: files, OutputDirs: []string{"charts", "charts/sub", "charts/empty", "chartsnot"}}, nil
	}}
	store := &memOutputs{}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{}, Outputs: store})
	in := messages.AcceptanceInput{Image: "env-1", Env: messages.BuildInput{Packages: []string{"pandas"}}, Code: "print()\n",
		Outputs: map[string]messages.Type{"report": messages.TypeFile, "charts": messages.TypeDir, "total": messages.TypeFloat}}
	out, err := h.Handle(ctxT(t), command(t, messages.StageRun, in))
	if err != nil {
		t.Fatal(err)
	}
	ao := value[messages.AcceptanceOutput](t, out)
	if !ao.OK {
		t.Fatalf("problems %v", ao.Problems)
	}
	report := jsonAs[sandbox.FileValue](t, ao.Outputs["report"])
	if report.Object != "sha256:"+sum(files["report"]) || !bytes.Equal(store.objs[sum(files["report"])], files["report"]) {
		t.Errorf("report %+v not stored by content", report)
	}
	charts := jsonAs[sandbox.DirValue](t, ao.Outputs["charts"])
	ref, ok := messages.ParseObjectRef(charts.Object)
	if !ok || charts.Files != 2 {
		t.Fatalf("charts %+v", charts)
	}
	var m sandbox.DirManifest
	if err := json.Unmarshal(store.objs[ref.SHA256], &m); err != nil {
		t.Fatal(err)
	}
	want := sandbox.DirManifest{
		Files: []sandbox.ManifestFile{{Path: "a.txt", Size: 1, SHA256: sum([]byte("1"))}, {Path: "sub/b.txt", Size: 2, SHA256: sum([]byte("22"))}},
		Dirs:  []string{"empty", "sub"},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	if !bytes.Equal(store.objs[sum([]byte("22"))], []byte("22")) {
		t.Error("a file of the Dir output was not stored")
	}
	if ao.Outputs["total"] != 3.5 {
		t.Errorf("total %v", ao.Outputs["total"])
	}
	// The same run again stores the same objects under the same names.
	out2, err := h.Handle(ctxT(t), command(t, messages.StageRun, in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ao, value[messages.AcceptanceOutput](t, out2)); diff != "" {
		t.Errorf("a second identical run differs (-first +second):\n%s", diff)
	}
}

// TestRunArgvAndDirInputs: input values reach the script as argv elements,
// whatever they hold (no shell), and a Dir input's archive is unpacked
// into a directory mounted at /var/inputs/<name>.
func TestRunArgvAndDirInputs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name string
		dir  bool
		body string
	}{{"sub/", true, ""}, {"a.txt", false, "A"}, {"sub/b.txt", false, "BB"}} {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.dir {
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	archive := filepath.Join(t.TempDir(), "extra.tar")
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen map[string]string
	b := &fakeBackend{run: func(spec sandbox.RunSpec) (sandbox.RunResult, error) {
		dir := spec.Inputs["extra"]
		a, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
		bb, _ := os.ReadFile(filepath.Join(dir, "sub", "b.txt"))
		seen = map[string]string{"a": string(a), "b": string(bb), "config": spec.Inputs["config.json"]}
		return sandbox.RunResult{}, nil
	}}
	extra := messages.SampleRef{Name: "extra", Object: "sha256:" + strings.Repeat("e", 64) + ".tar", FileName: "extra", Dir: true}
	config := messages.SampleRef{Name: "config", Object: "sha256:" + strings.Repeat("c", 64) + ".json", FileName: "config.json"}
	h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{paths: map[string]string{"extra": archive, "config.json": "/host/config"}}})
	weird := `-n $(rm -rf /) 'single' "double"; | & > out ` + "`id`\n\x01é"
	in := messages.AcceptanceInput{Image: "env-1", Env: messages.BuildInput{Packages: []string{"pandas"}}, Code: "print()\n",
		Samples: []messages.SampleRef{config, extra},
		Args:    map[string]string{"label": weird, "plain": "two words", "extra": "/var/inputs/extra", "config": "/var/inputs/config.json"}}
	if _, err := h.Handle(ctxT(t), command(t, messages.StageRun, in)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "A", "b": "BB", "config": "/host/config"}, seen); diff != "" {
		t.Errorf("inputs the run saw (-want +got):\n%s", diff)
	}
	want := []string{"python", sandbox.SolutionFile, "--config", "/var/inputs/config.json", "--extra", "/var/inputs/extra",
		"--label=" + weird, "--plain", "two words"}
	if diff := cmp.Diff(want, b.runs[0].Argv); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
	// The unpacked directory is gone after the run.
	if _, err := os.Stat(filepath.Dir(b.runs[0].Inputs["extra"])); !os.IsNotExist(err) {
		t.Errorf("the unpacked Dir input was left behind: %v", err)
	}
}

func TestDirInputArchiveMustStayInside(t *testing.T) {
	t.Parallel()
	for name, hdr := range map[string]*tar.Header{
		"parent":   {Name: "../evil", Typeflag: tar.TypeReg, Mode: 0o644},
		"absolute": {Name: "/etc/evil", Typeflag: tar.TypeReg, Mode: 0o644},
		"symlink":  {Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			tw.WriteHeader(hdr)
			tw.Close()
			archive := filepath.Join(t.TempDir(), "x.tar")
			os.WriteFile(archive, buf.Bytes(), 0o644)
			b := &fakeBackend{run: func(sandbox.RunSpec) (sandbox.RunResult, error) { return sandbox.RunResult{}, nil }}
			h := newStages(t, sandboxstages.Config{Backend: b, Samples: &fetcher{paths: map[string]string{"x": archive}}})
			in := messages.AcceptanceInput{Image: "env-1", Env: messages.BuildInput{Packages: []string{"p"}}, Code: "print()\n",
				Samples: []messages.SampleRef{{Name: "x", Object: "sha256:" + strings.Repeat("f", 64) + ".tar", FileName: "x", Dir: true}}}
			if _, err := h.Handle(ctxT(t), command(t, messages.StageRun, in)); !isPermanent(err) {
				t.Errorf("err = %v, want a permanent error", err)
			}
			if len(b.runs) != 0 {
				t.Error("the script ran")
			}
		})
	}
}

// jsonAs reads v, an output value as the result's JSON carries it, as T.
func jsonAs[T any](t *testing.T, v any) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}
