package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/egress"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/cache"
)

// Build makes (or reuses) the image of spec and returns its name as Env.ID.
//
// Package names are validated first (an *sandbox.InvalidPackageError for
// URLs, paths, options, shell syntax). The image name is a hash of the base
// image ID, its Python version, the sorted pip and apt packages, the pip
// index settings, Config.ExtraCommands and the builder version, so identical specs share an
// image, on every worker of the engine. Concurrent Builds of one image make
// one build: within this process by a singleflight, across workers by a
// lock in Config.Cache (the others wait for the image to appear). A new
// package set is built FROM the nearest existing image: the one with the
// largest subset of its packages (else the base image), installing the
// whole set again so that pip and apt resolve it as one. Packages apt or
// pip cannot find fail with an *sandbox.InvalidPackageError naming them;
// other install failures wrap sandbox.ErrBuildFailed.
func (b *Backend) Build(ctx context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	if b.isClosed() {
		return sandbox.Env{}, sandbox.ErrClosed
	}
	pip, err := sandbox.NormalizePackages(spec.Packages)
	if err != nil {
		return sandbox.Env{}, err
	}
	apt, err := normalizeApt(spec.SystemPackages)
	if err != nil {
		return sandbox.Env{}, err
	}
	hash := imageHash(b.base.ID, b.base.Python, pip, apt, b.pipIndexKey(), b.cfg.ExtraCommands)
	name := imageName(hash)
	env, ok := b.known.Load(name)
	if !ok {
		built, err := b.flight.Do(ctx, name, func(ctx context.Context) (sandbox.Env, error) {
			return b.buildOnce(ctx, name, pip, apt)
		})
		if err != nil {
			return sandbox.Env{}, err
		}
		b.known.Store(name, built)
		env = built
	}
	b.pool.touch(name)
	return b.tagForJob(ctx, env.(sandbox.Env), spec.Name, hash)
}

// tagForJob tags the environment image for the named job it was built for
// (jobImageName) and returns that name as the environment: runs of it
// carry the job's name as a label. The image is the same; a job without a
// name, or one that sanitises to nothing, keeps the content name.
func (b *Backend) tagForJob(ctx context.Context, env sandbox.Env, job, hash string) (sandbox.Env, error) {
	named := jobImageName(job, hash)
	if named == "" {
		return env, nil
	}
	if _, ok := b.known.Load(named); !ok {
		if err := b.cli.ImageTag(ctx, env.ID, named); err != nil {
			return sandbox.Env{}, fmt.Errorf("docker: tag %s as %s: %w", env.ID, named, err)
		}
		b.known.Store(named, true)
	}
	env.ID = named
	return env, nil
}

// buildOnce builds the image unless it exists, holding the cross-worker
// lock while it does; a worker that finds the lock held waits for the
// image (or for the lock to be free again: the holder failed).
func (b *Backend) buildOnce(ctx context.Context, name string, pip, apt []string) (sandbox.Env, error) {
	if ok, err := b.imageExists(ctx, name); err != nil || ok {
		return sandbox.Env{ID: name}, err
	}
	if b.cfg.Cache == nil {
		return b.build(ctx, name, pip, apt)
	}
	lock := buildLockName(name)
	waiting := false
	for {
		token, err := b.cfg.Cache.TryLock(ctx, lock, buildLockLease)
		if err == nil {
			stop := cache.Renew(ctx, b.cfg.Cache, lock, token, buildLockLease, func(err error) {
				b.log.Warn("image build lock not renewed", "image", name, "err", err)
			})
			defer func() {
				stop()
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := b.cfg.Cache.Unlock(uctx, lock, token); err != nil {
					b.log.Warn("release image build lock", "image", name, "err", err)
				}
			}()
			// Another worker may have finished between our look and the lock.
			if ok, err := b.imageExists(ctx, name); err != nil || ok {
				return sandbox.Env{ID: name}, err
			}
			return b.build(ctx, name, pip, apt)
		}
		if !errors.Is(err, cache.ErrLockHeld) {
			// The cache is away: build without the lock, as a stage
			// computes without its claim (at worst, twice).
			b.log.Warn("image build lock not taken; building without it", "image", name, "err", err)
			return b.build(ctx, name, pip, apt)
		}
		if !waiting {
			waiting = true
			b.log.Info("waiting for another worker's image build", "image", name)
		}
		select {
		case <-ctx.Done():
			return sandbox.Env{}, ctx.Err()
		case <-time.After(buildLockPollInterval):
		}
		if ok, err := b.imageExists(ctx, name); err != nil || ok {
			return sandbox.Env{ID: name}, err
		}
	}
}

func (b *Backend) imageExists(ctx context.Context, name string) (bool, error) {
	_, err := b.cli.ImageInspect(ctx, name)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("docker: inspect image %s: %w", name, err)
}

// parent is the image a build starts FROM.
type parent struct {
	ref      string   // image reference
	fromBase bool     // the base image: the sandbox layout must be added
	pip, apt []string // what it has
}

// nearest finds the built image with the largest subset of pip and apt,
// else the base image.
func (b *Backend) nearest(ctx context.Context, pip, apt []string) parent {
	best := parent{ref: b.cfg.BaseImage, fromBase: true}
	opts := image.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", labelBuilder+"="+strconv.Itoa(builderVersion)),
		filters.Arg("label", labelBase+"="+b.base.ID),
		filters.Arg("label", labelPipIndex+"="+b.pipIndexKey()),
	)}
	list, err := b.cli.ImageList(ctx, opts)
	// Podman fails a whole listing when an image is removed while it
	// lists ("image not known"): that passes, so try again.
	for attempt := 1; err != nil && attempt < 4 && ctx.Err() == nil; attempt++ {
		time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
		list, err = b.cli.ImageList(ctx, opts)
	}
	if err != nil {
		b.log.Warn("list images for an incremental build", "err", err)
		return best
	}
	bestSize := -1
	for _, img := range list {
		var ipip, iapt []string
		if json.Unmarshal([]byte(img.Labels[labelPipPackages]), &ipip) != nil ||
			json.Unmarshal([]byte(img.Labels[labelAptPackages]), &iapt) != nil {
			continue
		}
		if !subset(ipip, pip) || !subset(iapt, apt) || len(ipip)+len(iapt) <= bestSize {
			continue
		}
		// The name is what its labels hash to: a stale or foreign label
		// set simply names an image that does not exist.
		ref := imageName(imageHash(b.base.ID, b.base.Python, ipip, iapt, b.pipIndexKey(), b.cfg.ExtraCommands))
		if ok, _ := b.imageExists(ctx, ref); ok {
			best, bestSize = parent{ref: ref, pip: ipip, apt: iapt}, len(ipip)+len(iapt)
		}
	}
	return best
}

func subset(small, big []string) bool {
	set := map[string]bool{}
	for _, x := range big {
		set[x] = true
	}
	for _, x := range small {
		if !set[x] {
			return false
		}
	}
	return true
}

// build makes image name from the nearest parent. The trusted steps (the
// sandbox layout, ExtraCommands, apt) are an image build; pip, which runs
// the build code of packages the model named, runs in a container with no
// network whose only way out is the egress proxy (pipBuild), and that
// container becomes the image. With Config.BuildNetwork set, pip runs in
// the image build on that network instead (the operator's own egress).
func (b *Backend) build(ctx context.Context, name string, pip, apt []string) (sandbox.Env, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.BuildTimeout)
	defer cancel()
	from := b.nearest(ctx, pip, apt)
	install := b.pipInstallList(from, pip)
	labels := b.imageLabels(from, pip, apt)
	b.log.Info("image build started", "image", name, "from", from.ref, "pip", strings.Join(pip, " "), "apt", strings.Join(apt, " "))
	if len(install) == 0 || b.cfg.BuildNetwork != "" {
		log, err := b.imageBuild(ctx, name, from, pip, apt, install, labels)
		if err != nil {
			return sandbox.Env{}, err
		}
		return sandbox.Env{ID: name, Log: trim.HeadTail(log, maxBuildLog)}, nil
	}
	stage, log := from.ref, "FROM "+from.ref+"\n"
	if from.fromBase || len(apt) > 0 {
		stage = stageName(name)
		var err error
		if log, err = b.imageBuild(ctx, stage, from, pip, apt, nil, nil); err != nil {
			return sandbox.Env{}, err
		}
		defer b.untag(stage)
	}
	return b.pipBuild(ctx, pipJob{name: name, stage: stage, pip: pip, apt: apt, install: install, labels: labels}, log)
}

// pipInstallList is what pip installs FROM from: the packages, and pytest
// when the base image lacks it.
func (b *Backend) pipInstallList(from parent, pip []string) []string {
	install := append([]string{}, pip...)
	if from.fromBase && !b.base.Pytest {
		install = append(install, "pytest")
	}
	return install
}

// imageLabels are the labels of an environment image (names.go).
func (b *Backend) imageLabels(from parent, pip, apt []string) map[string]string {
	pipJSON, _ := json.Marshal(nonNil(pip))
	aptJSON, _ := json.Marshal(nonNil(apt))
	return map[string]string{
		labelBuilder:     strconv.Itoa(builderVersion),
		labelBase:        b.base.ID,
		labelPipPackages: string(pipJSON),
		labelAptPackages: string(aptJSON),
		labelPipIndex:    b.pipIndexKey(),
		labelExtra:       b.extraKey(),
		labelParent:      from.ref,
	}
}

// imageBuild runs one image build of the Dockerfile for from, apt and
// install (nil: no pip step), tagged name, and returns its log. A build
// that met an image or layer removed under it (another build's cleanup, an
// eviction) is run again: the engine's race, not the packages' failure.
func (b *Backend) imageBuild(ctx context.Context, name string, from parent, pip, apt, install []string, labels map[string]string) (string, error) {
	log, err := b.imageBuildOnce(ctx, name, from, pip, apt, install, labels)
	for attempt := 1; err != nil && engineRaceRe.MatchString(err.Error()) && attempt < 3 && ctx.Err() == nil; attempt++ {
		b.log.Warn("image build met a removal on the engine; building again", "image", name, "attempt", attempt+1, "err", err)
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		log, err = b.imageBuildOnce(ctx, name, from, pip, apt, install, labels)
	}
	return log, err
}

// engineRaceRe matches what Podman reports when an image or layer a build
// looked up was removed meanwhile.
var engineRaceRe = regexp.MustCompile(`layer not known|image not known|getting top layer info`)

func (b *Backend) imageBuildOnce(ctx context.Context, name string, from parent, pip, apt, install []string, labels map[string]string) (string, error) {
	start := time.Now()
	dockerfile, wheels := b.dockerfile(from, apt, install)
	buildCtx, err := contextTar(dockerfile, wheels)
	if err != nil {
		return "", fmt.Errorf("docker: build %s: %w", name, err)
	}
	resp, err := b.cli.ImageBuild(ctx, bytes.NewReader(buildCtx), build.ImageBuildOptions{
		Tags:        []string{name},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		PullParent:  false,
		NetworkMode: b.cfg.BuildNetwork,
		Version:     build.BuilderV1,
		// pip may run here (BuildNetwork), and with it a package's build
		// code: capped as in pip's own container.
		Memory:     max(b.cfg.BuildMemory, 0),
		MemorySwap: max(b.cfg.BuildMemory, 0),
		// No Ulimits: Podman's compat API refuses Docker's format, and
		// build steps run trusted installers with the engine's defaults.
		Labels: labels,
	})
	if err != nil {
		return "", fmt.Errorf("docker: build %s: %w", name, err)
	}
	logBuf := trim.NewBuffer(1 << 20)
	fmt.Fprintf(logBuf, "FROM %s\n", from.ref)
	errMsg, err := readJSONStream(resp.Body, logBuf)
	resp.Body.Close()
	errMsg, log := b.redactBuildText(errMsg), b.redactBuildText(string(logBuf.Bytes()))
	if err == nil && errMsg == "" {
		// Podman reports some failures only by not making the image.
		if ok, ierr := b.imageExists(ctx, name); ierr != nil || !ok {
			errMsg = "the build ended without an image"
		}
	}
	b.log.Info("image build finished", "image", name, "from", from.ref, "duration", time.Since(start),
		"err", errMsg, "stream_err", err)
	if err != nil {
		return "", fmt.Errorf("docker: build %s: read build output: %w", name, err)
	}
	if errMsg != "" {
		return "", classifyBuildFailure(name, pip, apt, errMsg, log)
	}
	return log, nil
}

// untag removes a stage image's tag; the image itself stays as the
// parent of the environment built on it. Podman may refuse for a moment
// after the pip container's removal ("in use"): retry a little.
func (b *Backend) untag(ref string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	for attempt := range 5 {
		_, err = b.cli.ImageRemove(ctx, ref, image.RemoveOptions{})
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	b.log.Warn("untag stage image", "image", ref, "err", err)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// baseSetup adds the sandbox layout to a base image: the mount points, the
// sandbox user and a python command. /workspace and /var/outputs are
// world-writable (sticky), like /tmp: a run mounts a tmpfs on each, and
// Podman gives such a tmpfs the mode of the directory under it (not the
// mount's mode=), with root as its owner.
const baseSetup = `set -eu
mkdir -p /workspace /var/inputs /var/outputs /usr/local/bin
chown 10001:10001 /workspace /var/outputs
chmod 1777 /workspace /var/outputs
chmod 0755 /var/inputs
grep -q '^sandbox:' /etc/passwd || echo 'sandbox:x:10001:10001:sandbox:/tmp:/usr/sbin/nologin' >> /etc/passwd
grep -q '^sandbox:' /etc/group || echo 'sandbox:x:10001:' >> /etc/group
command -v python >/dev/null 2>&1 || ln -s "$(command -v python3)" /usr/local/bin/python`

// aptInstall installs "$@" with apt, leaving no package lists behind.
const aptInstall = `set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -q --no-install-recommends "$@"
rm -rf /var/lib/apt/lists/*`

// wheelsDir is where local find-links directories are copied in a build.
const wheelsDir = "/tmp/autocoder-wheels"

// dockerfile writes the Dockerfile of an image build and lists the local
// wheel directories to send with it: the sandbox layout and ExtraCommands
// FROM the base image, apt, and pip for install (only with
// Config.BuildNetwork: pipBuild installs otherwise). Every instruction is
// in exec form: package names never meet a shell.
func (b *Backend) dockerfile(from parent, apt, install []string) (string, []string) {
	var df strings.Builder
	run := func(argv ...string) {
		j, _ := json.Marshal(argv)
		fmt.Fprintf(&df, "RUN %s\n", j)
	}
	fmt.Fprintf(&df, "FROM %s\nUSER root\n", from.ref)
	if from.fromBase {
		run("/bin/sh", "-c", baseSetup)
		// The operator's commands (trusted configuration, never model
		// output), before any package: a CA bundle or pip.conf they add
		// serves the installs. Images built FROM this one have them.
		for _, c := range b.cfg.ExtraCommands {
			run("/bin/sh", "-c", c)
		}
	}
	if len(apt) > 0 {
		run(append([]string{"/bin/sh", "-c", aptInstall, "apt-install"}, apt...)...)
	}
	if len(install) == 0 {
		return df.String(), nil
	}
	argv, wheels := b.pipArgv(install, b.cfg.PipIndexURL, func(a string) string { return a })
	if len(wheels) > 0 {
		fmt.Fprintf(&df, "COPY wheels/ %s/\n", wheelsDir)
	}
	run(argv...)
	return df.String(), wheels
}

// pipArgv is the pip install command of install, with indexURL and every
// URL argument passed through shown (how the build sees it), and the local
// find-links directories it expects at wheelsDir/<i>.
func (b *Backend) pipArgv(install []string, indexURL string, shown func(string) string) ([]string, []string) {
	argv := []string{"/usr/bin/env", "PIP_BREAK_SYSTEM_PACKAGES=1", "PIP_ROOT_USER_ACTION=ignore",
		"python3", "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--no-input",
		"--progress-bar", "off"}
	if indexURL != "" {
		argv = append(argv, "--index-url", shown(indexURL))
	} else if len(b.cfg.PipFindLinks) > 0 {
		argv = append(argv, "--no-index")
	}
	var wheels []string
	for _, fl := range b.cfg.PipFindLinks {
		if dir := localDir(fl); dir != "" {
			argv = append(argv, "--find-links", fmt.Sprintf("%s/%d", wheelsDir, len(wheels)))
			wheels = append(wheels, dir)
			continue
		}
		argv = append(argv, "--find-links", shown(fl))
	}
	for _, a := range b.cfg.PipExtraArgs {
		argv = append(argv, shownArg(a, shown))
	}
	argv = append(argv, "--")
	return append(argv, install...), wheels
}

// shownArg passes the URL in a pip argument (alone or after "--option=")
// through shown.
func shownArg(a string, shown func(string) string) string {
	if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
		return k + "=" + shown(v)
	}
	return shown(a)
}

// localDir returns the directory a find-links entry names on this machine
// ("" for a URL).
func localDir(fl string) string {
	p := strings.TrimPrefix(fl, "file://")
	if !filepath.IsAbs(p) {
		return ""
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return filepath.Clean(p)
	}
	return ""
}

// contextTar is the build context: the Dockerfile and wheels/<i>/ for each
// local wheel directory (regular files at its top level).
func contextTar(dockerfile string, wheels []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
			ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("Dockerfile", 0o644, []byte(dockerfile)); err != nil {
		return nil, err
	}
	for i, dir := range wheels {
		prefix := fmt.Sprintf("wheels/%d/", i)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix, Mode: 0o755, ModTime: epoch}); err != nil {
			return nil, err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("pip find-links %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.Type()&fs.ModeType != 0 {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("pip find-links %s: %w", dir, err)
			}
			if err := add(prefix+e.Name(), 0o644, data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// extraKey hashes Config.ExtraCommands for an image label (to read). An
// image with other extra commands is never a build parent: nearest checks
// that a candidate is the image its labels hash to with this backend's
// extra commands.
func (b *Backend) extraKey() string {
	if len(b.cfg.ExtraCommands) == 0 {
		return "none"
	}
	h := sha256.New()
	for _, c := range b.cfg.ExtraCommands {
		fmt.Fprintf(h, "extra %q\n", c)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// pipSources are the URLs a build may fetch from (egress.Config.Sources):
// the index and find-links, the URLs in PipExtraArgs, and PyPI when no
// index is configured at all. A pip.conf an ExtraCommands step writes into
// the image is not read: a source named only there is refused.
func pipSources(cfg Config) []string {
	src := append([]string{cfg.PipIndexURL}, cfg.PipFindLinks...)
	for _, a := range cfg.PipExtraArgs {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v
		}
		src = append(src, a)
	}
	if cfg.PipIndexURL == "" && len(cfg.PipFindLinks) == 0 {
		src = append(src, egress.PyPISources...)
	}
	return src
}

// pipIndexKey hashes the pip settings that decide what a name resolves to.
func (b *Backend) pipIndexKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "index %q\n", b.cfg.PipIndexURL)
	for _, fl := range b.cfg.PipFindLinks {
		fmt.Fprintf(h, "find-links %q\n", fl)
	}
	for _, a := range b.cfg.PipExtraArgs {
		fmt.Fprintf(h, "arg %q\n", a)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var (
	aptNameRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]{1,62}$`)
	aptNotFoundRe = regexp.MustCompile(`Unable to locate package (\S+)|Package '?([^' ]+)'? has no installation candidate|Couldn't find any package by (?:glob|regex) '([^']+)'`)
	aptNetworkRe  = regexp.MustCompile(`Temporary failure resolving|Could not resolve|Failed to fetch|Could not connect to|Unable to connect to|Connection timed out|Network is unreachable`)
	pipNotFoundRe = regexp.MustCompile(`(?:No matching distribution found for|Could not find a version that satisfies the requirement) (\S+)`)
	pipNetworkRe  = regexp.MustCompile(`NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|ConnectTimeoutError|ReadTimeoutError|ProxyError|SSLError|Network is unreachable|No route to host|Connection refused|Connection reset|Max retries exceeded`)
	stepFailedRe  = regexp.MustCompile(`returned a non-zero code|exit status \d+|non-zero exit|error building at STEP`)
)

// normalizeApt validates Debian package names (lower case letters, digits,
// + - . only) and returns them deduplicated and sorted.
func normalizeApt(pkgs []string) ([]string, error) {
	var bad []string
	set := map[string]bool{}
	for _, p := range pkgs {
		if !aptNameRe.MatchString(p) {
			bad = append(bad, p)
			continue
		}
		set[p] = true
	}
	if len(bad) > 0 {
		return nil, &sandbox.InvalidPackageError{Packages: bad, Log: "not a Debian package name"}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// classifyBuildFailure turns a failed build into the error the caller acts
// on: an *sandbox.InvalidPackageError for names apt or pip cannot find, a
// plain (retryable) error when a package source could not be reached or the
// engine failed, sandbox.ErrBuildFailed when an installer ran and failed.
func classifyBuildFailure(name string, pip, apt []string, errMsg, log string) error {
	all := log + "\n" + errMsg
	if aptNetworkRe.MatchString(all) || pipNetworkRe.MatchString(all) {
		return fmt.Errorf("docker: build %s: a package source could not be reached: %s: %s", name, errMsg, trim.Tail(log, 2048))
	}
	var bad []string
	seen := map[string]bool{}
	for _, m := range aptNotFoundRe.FindAllStringSubmatch(all, -1) {
		for _, g := range m[1:] {
			if g != "" && !seen["apt "+g] {
				seen["apt "+g] = true
				bad = append(bad, g)
			}
		}
	}
	for _, m := range pipNotFoundRe.FindAllStringSubmatch(all, -1) {
		found := protocol.CanonicalName(m[1])
		matched := false
		for _, r := range pip {
			if protocol.CanonicalName(r) == found && !seen["pip "+r] {
				seen["pip "+r], matched = true, true
				bad = append(bad, r)
			}
		}
		if !matched && !seen["pip "+found] && !seen["pip "+m[1]] {
			seen["pip "+found] = true
			bad = append(bad, m[1]) // a dependency the index lacks
		}
	}
	if len(bad) > 0 {
		return &sandbox.InvalidPackageError{Packages: bad, Log: trim.Tail(log, maxBuildLog)}
	}
	if stepFailedRe.MatchString(all) {
		return fmt.Errorf("%w: %s: %s\n%s", sandbox.ErrBuildFailed, name, errMsg, trim.Tail(log, 4096))
	}
	return fmt.Errorf("docker: build %s: %s\n%s", name, errMsg, trim.Tail(log, 2048))
}
