package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/egress"
	"github.com/autocoder/autocoder/internal/trim"
)

// Why pip runs in a container, not in the image build: Podman's
// Docker-compatible build API ignores NetworkMode (its RUN steps share the
// host's network, whatever is asked), so an image build cannot be confined
// on it. A container can: network "none" (only its own loopback), the
// egress Session's socket bound in, and pip behind the egress forwarder
// (egress.ForwarderScript), whose proxy reaches the package sources and
// nothing else. The container is committed as the environment image; its
// labels are the image's, and nothing of the worker's (no credential, no
// proxy setting) is in its configuration. Like the socket, local find-links
// directories are bound in, so builds need the engine on the worker's
// machine (a remote engine: set Config.BuildNetwork).

// pipJob is one pip step: install into stage, committed as name.
type pipJob struct {
	name, stage string
	pip, apt    []string // the environment's packages (for errors)
	install     []string // what pip installs
	labels      map[string]string
	binds       []string // the egress socket and local find-links directories
}

// pipReportPath is pip's --report file in the build container's /tmp (a
// tmpfs: nothing there is committed).
const pipReportPath = "/tmp/pip-report.json"

// pipBuild runs pip in a container of job.stage and commits it as
// job.name, returning the environment with its provenance. log is the log
// of the steps before.
func (b *Backend) pipBuild(ctx context.Context, job pipJob, log string) (sandbox.Env, error) {
	start := time.Now()
	sess, closeSession, err := b.egress.ListenInTempDir()
	if err != nil {
		return sandbox.Env{}, fmt.Errorf("docker: build %s: %w", job.name, err)
	}
	defer closeSession()
	argv, wheels := b.pipArgv(job.install, b.cfg.PipIndexURL, b.egress.SandboxURL)
	argv = withProxy(argv, b.egress.TrustedHosts())
	job.binds = []string{sess.Path + ":" + egress.SocketPath}
	for i, dir := range wheels {
		job.binds = append(job.binds, fmt.Sprintf("%s:%s/%d:ro", dir, wheelsDir, i))
	}
	id, err := b.createBuildContainer(ctx, job, egress.ForwarderArgv("python3", pipReportPath, argv))
	if err != nil {
		return sandbox.Env{}, err
	}
	defer b.remove(id)
	out, code, err := b.runBuildContainer(ctx, id)
	closeSession()
	reported, pipLog := egress.ParseProvenance(out)
	if denied := sess.Denied(); len(denied) > 0 {
		pipLog += fmt.Sprintf("\negress proxy refused (not package sources): %s\n", strings.Join(denied, " "))
	}
	log += "pip install " + strings.Join(job.install, " ") + "\n" + pipLog
	b.log.Info("image build finished", "image", job.name, "from", job.stage, "duration", time.Since(start),
		"exit_code", code, "err", err)
	if err != nil {
		return sandbox.Env{}, fmt.Errorf("docker: build %s: %w", job.name, err)
	}
	if code != 0 {
		return sandbox.Env{}, classifyBuildFailure(job.name, job.pip, job.apt, fmt.Sprintf("pip install: exit status %d", code), log)
	}
	if err := b.commit(ctx, id, job); err != nil {
		return sandbox.Env{}, err
	}
	return sandbox.Env{ID: job.name, Log: trim.HeadTail(log, maxBuildLog),
		Provenance: egress.Merge(reported, sess.Artifacts())}, nil
}

// withProxy adds pip's --proxy (the forwarder's), --report and the
// --trusted-host options before argv's "--".
func withProxy(argv, trusted []string) []string {
	opts := []string{"--proxy", egress.ProxyPlaceholder, "--report", pipReportPath}
	for _, h := range trusted {
		opts = append(opts, "--trusted-host", h)
	}
	for i, a := range argv {
		if a == "--" {
			return append(append(append([]string{}, argv[:i]...), opts...), argv[i:]...)
		}
	}
	return append(argv, opts...)
}

// createBuildContainer creates pip's container: root (pip installs into
// the system), no network, no capabilities, /tmp a tmpfs, memory capped
// (Config.BuildMemory), and no lifecycle
// labels (they would be committed into the image; it is removed by this
// worker, or by hand if the worker dies mid-build).
func (b *Backend) createBuildContainer(ctx context.Context, job pipJob, cmd []string) (string, error) {
	cfg := &container.Config{
		Image:        job.stage,
		User:         "0:0",
		Cmd:          cmd,
		Entrypoint:   []string{},
		WorkingDir:   "/",
		AttachStdout: true,
		AttachStderr: true,
		Labels:       job.labels,
	}
	host := &container.HostConfig{
		NetworkMode: "none",
		CapDrop:     []string{"ALL"},
		SecurityOpt: b.securityOpts,
		Binds:       job.binds,
		Tmpfs:       map[string]string{"/tmp": "rw,nosuid,nodev,size=2g,mode=1777"},
		LogConfig:   container.LogConfig{Type: "none"},
		Resources: container.Resources{
			// Memory and swap alike: a setup.py that allocates without end
			// ends its build, not the engine host.
			Memory:     max(b.cfg.BuildMemory, 0),
			MemorySwap: max(b.cfg.BuildMemory, 0),
			PidsLimit:  &b.cfg.PidsLimit,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: b.cfg.NoFile, Hard: b.cfg.NoFile},
				{Name: "nproc", Soft: b.cfg.NProc, Hard: b.cfg.NProc},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	created, err := b.cli.ContainerCreate(cctx, cfg, host, &network.NetworkingConfig{}, nil, buildContainerName(job.name, newNonce()[:8]))
	if err != nil {
		return "", fmt.Errorf("docker: build %s: create pip container: %w", job.name, err)
	}
	return created.ID, nil
}

// runBuildContainer starts the container and returns its output (stdout
// and stderr, head and tail) and exit code once it ends, or an error when
// ctx ends first (the container is then killed).
func (b *Backend) runBuildContainer(ctx context.Context, id string) (string, int, error) {
	att, err := b.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return "", -1, fmt.Errorf("attach pip container: %w", err)
	}
	defer att.Close()
	out := &lockedBuffer{buf: trim.NewBuffer(1 << 20)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(out, out, att.Reader)
	}()
	if err := b.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return "", -1, fmt.Errorf("start pip container: %w", err)
	}
	waitCh, errCh := b.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case res := <-waitCh:
		select {
		case <-copied:
		case <-time.After(10 * time.Second): // output already in; the stream lingers
		}
		return out.String(), int(res.StatusCode), nil
	case err := <-errCh:
		b.signal(id, "KILL")
		if ctx.Err() != nil {
			return out.String(), -1, fmt.Errorf("pip install timed out or was cancelled: %w", ctx.Err())
		}
		return out.String(), -1, fmt.Errorf("wait for pip container: %w", err)
	}
}

// commit makes the finished container image job.name, with the stage
// image's command (the container's is the forwarder's).
func (b *Backend) commit(ctx context.Context, id string, job pipJob) error {
	inspect, err := b.cli.ImageInspect(ctx, job.stage)
	if err != nil {
		return fmt.Errorf("docker: build %s: inspect %s: %w", job.name, job.stage, err)
	}
	cmd := []string{"python3"}
	if inspect.Config != nil && len(inspect.Config.Cmd) > 0 {
		cmd = inspect.Config.Cmd
	}
	cmdJSON, _ := json.Marshal(cmd)
	// Podman reads Changes, Docker the Config: both say the same.
	_, err = b.cli.ContainerCommit(ctx, id, container.CommitOptions{Reference: job.name,
		Changes: []string{"CMD " + string(cmdJSON)},
		Config:  &container.Config{Cmd: cmd, Labels: job.labels}})
	if err != nil {
		return fmt.Errorf("docker: build %s: commit: %w", job.name, err)
	}
	if ok, err := b.imageExists(ctx, job.name); err != nil || !ok {
		return fmt.Errorf("docker: build %s: the commit made no image (%v)", job.name, err)
	}
	return nil
}

// lockedBuffer is a trim.Buffer written by one goroutine and read by
// another.
type lockedBuffer struct {
	mu  sync.Mutex
	buf *trim.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf.Bytes())
}
