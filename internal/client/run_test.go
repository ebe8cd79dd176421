package client_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/pkg/messages"
)

func (s *system) putResult(r messages.Result) {
	s.t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.res.JobResults.Put(ctxT(s.t), bus.JobKey(r.JobID), b); err != nil {
		s.t.Fatal(err)
	}
}

// putObject stores data in the outputs store and returns its reference.
func (s *system) putObject(data []byte) string {
	s.t.Helper()
	sum := sha256.Sum256(data)
	ref := messages.ObjectRef{SHA256: hex.EncodeToString(sum[:])}
	if _, err := s.res.Outputs.Put(ctxT(s.t), jetstream.ObjectMeta{Name: ref.ObjectName()}, bytes.NewReader(data)); err != nil {
		s.t.Fatal(err)
	}
	return ref.String()
}

func TestTasks(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	spec := messages.JobSpec{Prompt: "sum", Inputs: map[string]messages.Type{"n": messages.TypeInt}, Samples: map[string]string{"sales": "sha256:" + strings.Repeat("a", 64)}}
	s.putResult(messages.Result{JobID: "job-ok", Success: true, Status: messages.StatusSucceeded, Spec: &spec, Solution: &messages.Solution{Code: "x"}})
	s.putResult(messages.Result{JobID: "job-bad", Status: messages.StatusFailed, Spec: &spec})
	c := s.client
	if ts, err := c.Tasks(ctxT(t)); err != nil || len(ts) != 0 {
		t.Fatalf("Tasks on an empty bucket = %v, %v", ts, err)
	}
	task, err := c.RegisterTask(ctxT(t), "daily-sum", "job-ok", "the daily sum", nil)
	if err != nil {
		t.Fatal(err)
	}
	if task.JobID != "job-ok" || task.Inputs["n"] != messages.TypeInt || task.Samples[0] != "sales" || task.CreatedAt.IsZero() {
		t.Errorf("task %+v", task)
	}
	var fe *messages.FieldError
	for _, bad := range [][2]string{{"daily-sum", "job-bad"}, {"daily-sum", "job-none"}, {"a.b", "job-ok"}, {"", "job-ok"}} {
		if _, err := c.RegisterTask(ctxT(t), bad[0], bad[1], "", nil); !errors.As(err, &fe) {
			t.Errorf("RegisterTask(%q, %q) = %v, want a field error", bad[0], bad[1], err)
		}
	}
	if _, err := c.RegisterTask(ctxT(t), "another", "job-ok", "", nil); err != nil {
		t.Fatal(err)
	}
	ts, err := c.Tasks(ctxT(t))
	if err != nil || len(ts) != 2 || ts[0].Name != "another" || ts[1].Description != "the daily sum" {
		t.Fatalf("Tasks = %+v, %v", ts, err)
	}
	if err := c.DeleteTask(ctxT(t), "another"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Task(ctxT(t), "another"); !errors.Is(err, client.ErrNoTask) {
		t.Errorf("Task after delete = %v", err)
	}
	if err := c.DeleteTask(ctxT(t), "another"); !errors.Is(err, client.ErrNoTask) {
		t.Errorf("DeleteTask twice = %v", err)
	}
	if ts, _ := c.Tasks(ctxT(t)); len(ts) != 1 {
		t.Errorf("Tasks after delete = %+v", ts)
	}
}

func TestDownloadOutputs(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	report := []byte("a,b\n1,2\n")
	reportRef := s.putObject(report)
	one, two := []byte("1"), []byte("22")
	ref := func(b []byte) string { r, _ := messages.ParseObjectRef(s.putObject(b)); return r.SHA256 }
	manifest, _ := json.Marshal(sandbox.DirManifest{
		Files: []sandbox.ManifestFile{{Path: "a.txt", Size: 1, SHA256: ref(one)}, {Path: "sub/b.txt", Size: 2, SHA256: ref(two)}},
		Dirs:  []string{"empty", "sub"}})
	chartsRef := s.putObject(manifest)
	evil, _ := json.Marshal(sandbox.DirManifest{Files: []sandbox.ManifestFile{{Path: "../escaped", Size: 1, SHA256: ref(one)}}})
	evilRef := s.putObject(evil)
	spec := &messages.JobSpec{Outputs: map[string]messages.Type{"report": messages.TypeFile, "charts": messages.TypeDir, "n": messages.TypeInt}}
	res := &messages.Result{Spec: spec, Outputs: map[string]any{
		"report": map[string]any{"path": "report", "object": reportRef},
		"charts": map[string]any{"path": "charts", "object": chartsRef},
		"n":      3.0,
	}}
	dir := t.TempDir()
	// An older download is replaced.
	os.MkdirAll(filepath.Join(dir, "charts", "stale"), 0o755)
	written, err := s.client.DownloadOutputs(ctxT(t), res, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 2 {
		t.Errorf("written %v", written)
	}
	for p, want := range map[string]string{"report": string(report), "charts/a.txt": "1", "charts/sub/b.txt": "22"} {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "charts", "empty")); err != nil || !fi.IsDir() {
		t.Errorf("empty dir not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "charts", "stale")); !os.IsNotExist(err) {
		t.Errorf("the old charts directory was not replaced: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %d entries (temporary files left?): %v", len(entries), entries)
	}

	// A manifest path outside the directory is refused.
	res.Outputs = map[string]any{"charts": map[string]any{"object": evilRef}}
	if _, err := s.client.DownloadOutputs(ctxT(t), res, t.TempDir()); err == nil || !strings.Contains(err.Error(), "outside the directory") {
		t.Errorf("evil manifest: %v", err)
	}
	// A missing object is an error that says so.
	res.Outputs = map[string]any{"report": map[string]any{"object": "sha256:" + strings.Repeat("0", 64)}}
	if _, err := s.client.DownloadOutputs(ctxT(t), res, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no longer in the outputs store") {
		t.Errorf("missing object: %v", err)
	}
}
