package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// BenchmarkEngineCalls times each engine call a sandbox run can make, one
// after another on one container per iteration, and reports the medians
// (ms): what a run through the archive API paid (attach, a PUT of the
// workspace, two stats and a GET of the JUnit report) against what the
// stub's request and trailer carry instead, and what the pool pays off
// the run's clock (create and start, the ping, removal). "run-ms" is the
// request to both trailers of a fresh python writing a report with the files in the
// request and the report in the trailer.
func BenchmarkEngineCalls(b *testing.B) {
	image := os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE")
	if image == "" {
		image = "autocoder-base:bookworm"
	}
	be, err := New(b.Context(), Config{BaseImage: image, NoPull: true, Worker: "bench-engine-calls", PoolSize: -1,
		ReapInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	env, err := be.Build(b.Context(), sandbox.EnvSpec{})
	if err != nil {
		b.Fatal(err)
	}
	files := map[string][]byte{"solution.py": bytes.Repeat([]byte("x"), 2000), "test_solution.py": bytes.Repeat([]byte("y"), 4000)}
	workspace := benchTar(b, files)
	script := "import os; os.makedirs('.harness'); open('.harness/junit.xml', 'w').write('j' * 3000)"
	times := map[string][]time.Duration{}
	timed := func(name string, fn func() error) {
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		times[name] = append(times[name], time.Since(start))
	}
	for b.Loop() {
		var bx *box
		timed("create+start", func() (err error) {
			bx, err = be.startBox(b.Context(), env.ID, sandbox.DefaultMemory, 1, 5*time.Minute, "bench", "bench", "")
			return err
		})
		timed("attach", func() error { return be.connect(b.Context(), bx) })
		timed("ping", func() error { return be.makeReady(b.Context(), bx) })
		timed("archive-put", func() error { return be.copyIn(b.Context(), bx.id, sandbox.WorkspaceDir, workspace) })
		req := request{Argv: []string{"python", "-c", script}, Env: map[string]string{}, Cwd: sandbox.WorkspaceDir,
			Timeout: 60, Files: files, Results: &resultsSpec{Collect: []string{".harness/junit.xml"}, Budget: sandbox.MaxCollected}}
		timed("run", func() error {
			res, err := be.execute(b.Context(), bx, req, time.Minute, 1<<20, nil, nil)
			if err == nil && res.ExitCode != 0 {
				b.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		})
		for _, p := range []string{"/workspace/.harness", "/workspace/.harness/junit.xml"} {
			timed("archive-stat", func() error { _, err := be.cli.ContainerStatPath(b.Context(), bx.id, p); return err })
		}
		timed("archive-get", func() error {
			rc, _, err := be.cli.CopyFromContainer(b.Context(), bx.id, "/workspace/.harness/junit.xml")
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			return err
		})
		timed("remove", func() error {
			return be.cli.ContainerRemove(b.Context(), bx.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		})
	}
	for name, d := range times {
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2])/float64(time.Millisecond), name+"-ms")
	}
}

func benchTar(b *testing.B, files map[string][]byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Uid: sandboxUID, Gid: sandboxUID}); err != nil {
			b.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	return buf.Bytes()
}
