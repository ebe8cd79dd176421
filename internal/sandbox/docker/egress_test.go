package docker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/docker"
	"github.com/autocoder/autocoder/internal/sandbox/sandboxtest"
)

// TestBuildIsConfined: a package's build code (setup.py of an sdist from an
// index that wants a password) reaches none of the host's loopback
// listener, redis-server and NATS server, directly or through the build's
// proxy; the password is in neither what the build code can see (its
// environment, any visible process's argv) nor the image (its files, its
// configuration, its history); and the build records what it fetched.
func TestBuildIsConfined(t *testing.T) {
	t.Parallel()
	bait := sandboxtest.NewBait(t)
	cfg := testConfig(t)
	cfg.PipIndexURL = bait.IndexURL
	// --no-build-isolation: setuptools comes from the image, not an index.
	cfg.PipExtraArgs = []string{"--no-build-isolation"}
	cfg.PoolSize, cfg.ReapInterval = -1, -1
	b := newBackend(t, cfg)
	var id string
	removeImages(t, &id)
	env, err := b.Build(t.Context(), sandbox.EnvSpec{Packages: []string{bait.Package}})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	id = env.ID
	res, err := b.Run(t.Context(), sandbox.RunSpec{Env: env.ID, Argv: []string{"cat", "/usr/local/" + sandboxtest.SeenFile}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("read what the build code saw: %v %d %s\nlog:\n%s", err, res.ExitCode, res.Stderr, env.Log)
	}
	bait.Check(t, string(res.Stdout))
	if !strings.Contains(env.Log, "egress proxy refused") {
		t.Errorf("the build log does not show the refusals:\n%s", env.Log)
	}
	bait.NoSecret(t, "the build log", env.Log)
	checkImageHasNoSecret(t, bait, env.ID)
	var sdist *sandbox.Artifact
	for i, a := range env.Provenance {
		if strings.HasSuffix(a.URL, "/files/"+bait.Package+"-1.0.tar.gz") {
			sdist = &env.Provenance[i]
		}
	}
	if sdist == nil || len(sdist.SHA256) != 64 || sdist.Bytes == 0 {
		t.Errorf("provenance %+v: want the sdist with its SHA-256 and size", env.Provenance)
	}
}

// checkImageHasNoSecret looks for the index password in the image's
// configuration, history and every layer (the saved image, whole).
func checkImageHasNoSecret(t *testing.T, bait *sandboxtest.Bait, ref string) {
	cli, err := docker.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	inspect, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(inspect)
	bait.NoSecret(t, "the image's configuration", string(data))
	hist, err := cli.ImageHistory(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(hist)
	bait.NoSecret(t, "the image's history", string(data))
	rc, err := cli.ImageSave(ctx, []string{ref})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if found, err := streamContains(rc, []byte(bait.Secret)); err != nil {
		t.Fatalf("save image: %v", err)
	} else if found {
		t.Errorf("the saved image %s holds the index password", ref)
	}
}

// streamContains tells whether r holds needle, reading it in blocks.
func streamContains(r io.Reader, needle []byte) (bool, error) {
	buf := make([]byte, 1<<20)
	var tail []byte
	for {
		n, err := r.Read(buf)
		chunk := append(tail, buf[:n]...)
		if bytes.Contains(chunk, needle) {
			return true, nil
		}
		if len(chunk) >= len(needle) {
			tail = append([]byte(nil), chunk[len(chunk)-len(needle)+1:]...)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// TestEngineIsLocal: confined builds bind a socket of this machine, so New
// refuses an engine elsewhere unless BuildNetwork is set.
func TestEngineIsLocal(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"unix:///run/autocoder/podman.sock": true,
		"tcp://127.0.0.1:2375":              true,
		"tcp://localhost:2376":              true,
		"tcp://[::1]:2375":                  true,
		"tcp://10.1.2.3:2376":               false,
		"tcp://docker.internal:2376":        false,
		"ssh://user@host":                   false,
	} {
		if got := docker.EngineIsLocal(host); got != want {
			t.Errorf("EngineIsLocal(%q) = %v, want %v", host, got, want)
		}
	}
}
