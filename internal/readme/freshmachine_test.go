package readme

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/autocoder/autocoder/internal/sandbox/docker"
)

// freshMachineDeadline bounds the whole test. Most of it is the first
// build in the container: the modules downloaded, every dependency
// compiled on the machine's cores (8.5 minutes measured on a loaded 2-core
// machine).
const freshMachineDeadline = 40 * time.Minute

// The container's paths: Go where its tarball puts it, the checkout in
// root's home.
const (
	containerGoroot   = "/usr/local/go"
	containerCheckout = "/root/autocoder"
	hostCABundle      = "/etc/ssl/certs/ca-certificates.crt"
)

// TestFreshMachine runs the README's first command where a newcomer would:
// a Debian 12 machine with nothing but Go. The machine is a container of
// the offline base image (scripts/setup-docker.sh: Debian minbase with
// python3), with this machine's Go and the checkout copied in, and pytest
// removed: no bubblewrap, no Redis, no pytest, no pandas. The command must
// install what it needs from Debian's mirror, build, and run the sales
// example to its end.
//
// The container is privileged: bubblewrap makes namespaces inside it, as
// it does on a machine. It trusts the CA bundle this machine trusts (the
// base image has none, and the Go module proxy is reached over TLS,
// through this machine's network).
func TestFreshMachine(t *testing.T) {
	t.Parallel()
	first := blocksMarked(t, markFreshMachine)[0]
	ctx, cancel := context.WithTimeout(context.Background(), freshMachineDeadline)
	defer cancel()
	cli := dockerClient(ctx, t)
	box := startMachine(ctx, t, cli)

	goroot := strings.TrimSpace(output(t, "go", "env", "GOROOT"))
	box.copyTree(ctx, t, goroot, containerGoroot, nil)
	root := repoRoot(t)
	box.copyTree(ctx, t, root, containerCheckout, checkoutFiles(t))
	if _, err := os.Stat(hostCABundle); err == nil {
		box.copyTree(ctx, t, filepath.Dir(hostCABundle), filepath.Dir(hostCABundle), []string{filepath.Base(hostCABundle)})
	}

	// As on a fresh machine: none of what the first command installs.
	box.run(ctx, t, "/", "remove pytest", "apt-get purge -y -qq python3-pytest >/dev/null")
	box.run(ctx, t, "/", "check that nothing is installed", `
for tool in bwrap redis-server; do
  if command -v $tool; then echo "$tool is installed"; exit 1; fi
done
for module in pytest pandas; do
  if python3 -c "import $module" 2>/dev/null; then echo "python3 has $module"; exit 1; fi
done`)

	start := time.Now()
	out := box.run(ctx, t, containerCheckout, fmt.Sprintf("README.md:%d (%s)", first.line, first.section), first.code)
	t.Logf("the first command ran in %s on a fresh machine", time.Since(start).Round(time.Second))
	mustContain(t, "the first command's output", out,
		"quickstart: installing the process sandbox's Debian packages",
		"takes a few minutes",
		"SCRIPTED MODEL",
		"SUCCESS: the generated script passed its tests",
		"total_revenue = 1485.95")
}

// dockerClient connects to the engine on DOCKER_HOST, failing with how to
// get one: scripts/test.sh sets it up.
func dockerClient(ctx context.Context, t *testing.T) *client.Client {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := docker.Ping(pctx, "")
	cancel()
	if err != nil {
		t.Fatalf("%v\nrun scripts/setup-docker.sh and export the DOCKER_HOST it prints (scripts/test.sh does both)", err)
	}
	cli, err := docker.NewClient("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// machine is a running container standing in for a fresh machine.
type machine struct {
	cli *client.Client
	id  string
	env []string
}

// startMachine starts a container of the base image that sleeps until it
// is removed, at the end of the test.
func startMachine(ctx context.Context, t *testing.T, cli *client.Client) *machine {
	t.Helper()
	image := os.Getenv("AUTOCODER_DOCKER_BASE_IMAGE")
	if image == "" {
		image = "autocoder-base:bookworm"
	}
	cfg := &container.Config{Image: image, Cmd: []string{"sleep", "infinity"},
		Labels: map[string]string{"autocoder.test": "readme-fresh-machine"}}
	host := &container.HostConfig{
		Privileged: true, // bubblewrap's namespaces, as on a machine
		// Explicit limits: podman otherwise copies its own, which a
		// privileged container may not be given on every host.
		Resources: container.Resources{Ulimits: []*container.Ulimit{
			{Name: "nofile", Soft: 4096, Hard: 4096},
			{Name: "nproc", Soft: 8192, Hard: 8192},
		}},
	}
	created, err := cli.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		t.Fatalf("create the machine's container from %s: %v (scripts/setup-docker.sh imports it)", image, err)
	}
	t.Cleanup(func() {
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := cli.ContainerRemove(rctx, created.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("remove the machine's container: %v", err)
		}
	})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start the machine's container: %v", err)
	}
	env := append([]string{"PATH=" + containerGoroot + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8"}, proxySettings(t)...)
	return &machine{cli: cli, id: created.ID, env: env}
}

// proxySettings are this machine's settings of the Go module proxy, which
// a newcomer's machine on this network would have too (and nothing of
// this machine's build cache).
func proxySettings(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, kv := range goSettings(t) {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GOPROXY", "GOFLAGS", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE", "GOTOOLCHAIN":
			out = append(out, kv)
		}
	}
	return out
}

// copyTree copies files (paths relative to src; nil: all of src) into the
// container at dst, through the engine's archive API.
func (m *machine) copyTree(ctx context.Context, t *testing.T, src, dst string, files []string) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, src, filepath.Base(dst), files)) }()
	if err := m.cli.CopyToContainer(ctx, m.id, filepath.Dir(dst), pr, container.CopyToContainerOptions{}); err != nil {
		t.Fatalf("copy %s into the machine: %v", src, err)
	}
}

// writeTar writes a tar of files under src (nil: the whole tree), named
// under prefix.
func writeTar(w io.Writer, src, prefix string, files []string) error {
	tw := tar.NewWriter(w)
	add := func(rel string, fi fs.FileInfo) error {
		path := filepath.Join(src, rel)
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			var err error
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = filepath.ToSlash(filepath.Join(prefix, rel)), 0, 0, "root", "root"
		if fi.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	}
	if files == nil {
		err := filepath.Walk(src, func(path string, fi fs.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, path)
			if err != nil {
				return err
			}
			return add(rel, fi)
		})
		if err != nil {
			return err
		}
	}
	// The listed files' directories first, so that the engine makes them
	// with their modes.
	dirs := map[string]bool{}
	var order []string
	for _, rel := range files {
		for d := filepath.Dir(rel); ; d = filepath.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				order = append(order, d)
			}
			if d == "." {
				break
			}
		}
	}
	slices.Sort(order) // parents before children
	for _, d := range order {
		fi, err := os.Stat(filepath.Join(src, d))
		if err != nil {
			return err
		}
		if err := add(d, fi); err != nil {
			return err
		}
	}
	for _, rel := range files {
		fi, err := os.Lstat(filepath.Join(src, rel))
		if err != nil {
			return err
		}
		if err := add(rel, fi); err != nil {
			return err
		}
	}
	return tw.Close()
}

// run runs script with bash -euo pipefail in dir inside the machine, as
// root, and returns its output; a non-zero exit fails the test with it.
func (m *machine) run(ctx context.Context, t *testing.T, dir, what, script string) string {
	t.Helper()
	ex, err := m.cli.ContainerExecCreate(ctx, m.id, container.ExecOptions{
		Cmd: []string{"bash", "-euo", "pipefail", "-c", script}, Env: m.env, WorkingDir: dir,
		AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatalf("%s: exec: %v", what, err)
	}
	att, err := m.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatalf("%s: attach: %v", what, err)
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		t.Fatalf("%s: read its output: %v\n%s", what, err, tail(out.String(), 8000))
	}
	ins, err := m.cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		t.Fatalf("%s: inspect: %v", what, err)
	}
	if ins.ExitCode != 0 {
		t.Fatalf("%s: exit %d on the fresh machine\n%s", what, ins.ExitCode, tail(out.String(), 8000))
	}
	return out.String()
}

func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(out)
}
