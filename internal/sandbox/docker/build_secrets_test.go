package docker_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// TestBuildHidesIndexPassword: a build's log (which has the pip step and
// its output), a failed build's error and the backend's log lines never show
// the index's password: pip itself never gets it (the egress proxy adds it
// upstream), and what the engine echoes is redacted too.
func TestBuildHidesIndexPassword(t *testing.T) {
	t.Parallel()
	const secret = "idx-s3cr3t-pw"
	wheels := t.TempDir()
	pkg := "acprobe-secret-" + nonce(t)
	writeWheel(t, wheels, pkg, "x")
	cfg := wheelConfig(t, wheels, nil)
	// Nothing listens there: pip falls back to the wheels, or fails.
	cfg.PipIndexURL = "http://user:" + secret + "@127.0.0.1:9/simple"
	logs := &lockedLog{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	be := newBackend(t, cfg)

	env, err := be.Build(t.Context(), sandbox.EnvSpec{Packages: []string{pkg}})
	if err != nil {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("build error shows the password: %v", err)
		}
	} else if strings.Contains(env.Log, secret) || !strings.Contains(env.Log, "pip install") {
		t.Errorf("build log shows the password, or lacks the pip line:\n%s", env.Log)
	}
	_, err = be.Build(t.Context(), sandbox.EnvSpec{Packages: []string{"acprobe-missing-" + nonce(t)}})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("a failed build: err = %v; want an error without the password", err)
	}
	var inv *sandbox.InvalidPackageError
	if errors.As(err, &inv) && strings.Contains(inv.Log, secret) {
		t.Errorf("a failed build's log shows the password:\n%s", inv.Log)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the backend logged the password:\n%s", logs.String())
	}
}

type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
