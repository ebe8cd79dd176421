package bwrap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/egress"
	"github.com/autocoder/autocoder/internal/trim"
	"github.com/autocoder/autocoder/pkg/messages"
)

// builderVersion is part of every Env.ID: bump it when the layout of an
// environment changes, so old ones are not reused.
const builderVersion = 2 // 2: builds confined to the egress proxy

// envMarker is written last into a finished environment.
const envMarker = "autocoder-env.json"

// envRecord is the content of envMarker.
type envRecord struct {
	ID        string    `json:"id"`
	Python    string    `json:"python"`
	Version   string    `json:"version"`
	Packages  []string  `json:"packages"`
	Installed []string  `json:"installed"` // by pip; the rest came with the base interpreter
	Log       string    `json:"log"`
	BuiltAt   time.Time `json:"built_at"`
	// Provenance is what the build fetched (sandbox.Env.Provenance).
	Provenance []sandbox.Artifact `json:"provenance,omitempty"`
}

var envIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Build makes (or reuses) a virtual environment with spec.Packages.
//
// Names are validated first (an *InvalidPackageError for URLs, paths,
// options and the like). Packages the base interpreter already has, at a
// satisfying version, are not installed again; the rest are installed by
// pip, which runs in a sandbox with no network of its own and nothing of
// the host's secrets: its only way out is the egress proxy, which reaches
// the configured package sources and nothing else (package egress). The environment is built in a temporary directory and
// renamed into place, so concurrent builds of the same spec, in this process
// or others sharing StateDir, are safe.
//
// SystemPackages cannot be installed by this backend: Build checks with
// dpkg that each is already installed on the host (and so visible through
// /usr), and fails with ErrBuildFailed naming the ones that are not.
func (b *Backend) Build(ctx context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	if b.isClosed() {
		return sandbox.Env{}, sandbox.ErrClosed
	}
	pkgs, err := sandbox.NormalizePackages(spec.Packages)
	if err != nil {
		return sandbox.Env{}, err
	}
	if err := ctx.Err(); err != nil {
		return sandbox.Env{}, fmt.Errorf("sandbox: build: %w", err)
	}
	if err := checkSystemPackages(ctx, spec.SystemPackages); err != nil {
		return sandbox.Env{}, err
	}
	id := b.envID(pkgs)
	if env, ok := b.lookupEnv(id); ok {
		return env, nil
	}
	return b.flight.Do(ctx, id, func(ctx context.Context) (sandbox.Env, error) {
		if env, ok := b.lookupEnv(id); ok {
			return env, nil
		}
		start := time.Now()
		env, err := b.build(ctx, id, pkgs)
		b.log.Info("sandbox build", "env", id, "packages", strings.Join(pkgs, " "),
			"duration", time.Since(start), "err", err)
		return env, err
	})
}

// envID hashes what an environment is made of.
func (b *Backend) envID(pkgs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "autocoder process env\nbuilder %d\npython %s\nversion %s\n", builderVersion, b.py.Executable, b.py.Version)
	for _, pkg := range pkgs {
		fmt.Fprintf(h, "package %s\n", pkg)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// envDir returns the directory of a built environment.
func (b *Backend) envDir(id string) (string, error) {
	if !envIDRe.MatchString(id) {
		return "", fmt.Errorf("%w: %q is not a process backend environment id", sandbox.ErrEnvNotFound, id)
	}
	dir := filepath.Join(b.envsDir, id)
	if _, err := os.Stat(filepath.Join(dir, envMarker)); err != nil {
		return "", fmt.Errorf("%w: %s (build it on this worker first)", sandbox.ErrEnvNotFound, id)
	}
	return dir, nil
}

func (b *Backend) lookupEnv(id string) (sandbox.Env, bool) {
	data, err := os.ReadFile(filepath.Join(b.envsDir, id, envMarker))
	if err != nil {
		return sandbox.Env{}, false
	}
	var rec envRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.ID != id {
		return sandbox.Env{}, false
	}
	return sandbox.Env{ID: id, Log: rec.Log, Provenance: rec.Provenance}, true
}

// build makes the environment id in a temporary directory and renames it
// into place: a venv of the base interpreter, then pip for the packages it
// lacks, both in sandboxes.
func (b *Backend) build(ctx context.Context, id string, pkgs []string) (sandbox.Env, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.BuildTimeout)
	defer cancel()
	var log strings.Builder
	fmt.Fprintf(&log, "python: %s (%s)\n", b.py.Executable, firstLine(b.py.Version))
	missing, err := b.packagesToInstall(ctx, pkgs, &log)
	if err != nil {
		return sandbox.Env{}, err
	}
	dir, err := b.newBuildDir(id)
	if err != nil {
		return sandbox.Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	defer b.removeBuildDir(dir)
	base := b.buildSpec(dir)
	if err := b.createVenv(ctx, base); err != nil {
		return sandbox.Env{}, fmt.Errorf("sandbox: build %s: create venv: %w", id, err)
	}
	var provenance []sandbox.Artifact
	if len(missing) > 0 {
		if provenance, err = b.pipInstall(ctx, id, base, missing, &log); err != nil {
			return sandbox.Env{}, err
		}
	}
	return b.installEnv(dir.venv, envRecord{ID: id, Python: b.py.Executable, Version: b.py.Version,
		Packages: pkgs, Installed: missing, Log: log.String(), BuiltAt: time.Now().UTC(), Provenance: provenance})
}

// packagesToInstall returns the packages the base interpreter lacks, and
// fails when they cannot be installed (pip disabled or absent).
func (b *Backend) packagesToInstall(ctx context.Context, pkgs []string, log *strings.Builder) ([]string, error) {
	missing, err := b.missingPackages(ctx, pkgs)
	if err != nil {
		return nil, err
	}
	if have := len(pkgs) - len(missing); have > 0 {
		fmt.Fprintf(log, "already installed in the base interpreter: %s\n", strings.Join(without(pkgs, missing), " "))
	}
	if len(missing) > 0 && b.cfg.PipDisabled {
		return nil, &sandbox.InvalidPackageError{Packages: missing,
			Log: log.String() + "not installed in the base interpreter, and pip is disabled (bwrap.Config.PipDisabled)\n"}
	}
	if len(missing) > 0 && !b.py.Pip {
		return nil, fmt.Errorf("%w: %s has no pip to install %s (install python3-pip)",
			sandbox.ErrBuildFailed, b.py.Executable, strings.Join(missing, " "))
	}
	return missing, nil
}

// buildDir is a build's scratch directory under envsDir: the venv (renamed
// into place at the end), pip's work dir (the build's /tmp), the
// synthesized /etc files, and the uid the build runs as.
type buildDir struct {
	tmp, venv, work, etc string
	uid                  uint32
}

func (b *Backend) newBuildDir(id string) (*buildDir, error) {
	tmp, err := os.MkdirTemp(b.envsDir, ".tmp-"+id+"-")
	if err != nil {
		return nil, err
	}
	d := &buildDir{tmp: tmp, venv: filepath.Join(tmp, "venv"), work: filepath.Join(tmp, "work"),
		etc: filepath.Join(tmp, "etc"), uid: b.takeUID()}
	if err := b.prepareBuildDir(d); err != nil {
		b.removeBuildDir(d)
		return nil, err
	}
	return d, nil
}

// prepareBuildDir makes the venv and work dirs, owned by the build's uid,
// and the /etc files.
func (b *Backend) prepareBuildDir(d *buildDir) error {
	for _, dir := range []string{d.venv, d.work} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
	}
	if err := writeEtc(d.etc, b.sandboxUID(d.uid)); err != nil {
		return err
	}
	for _, dir := range []string{d.venv, d.work} {
		if err := b.chownTree(dir, d.uid); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) removeBuildDir(d *buildDir) {
	_ = os.RemoveAll(d.tmp)
	b.releaseUID(d.uid)
}

// buildSpec is what every sandbox of a build shares. The venv is made
// inside the sandbox, at the path runs will see it, so that pyvenv.cfg and
// the scripts pip writes name /opt/venv. Builds get a cgroup too (memory
// and processes, no CPU quota): pip runs packages' build code, which is as
// untrusted as the names it came from.
func (b *Backend) buildSpec(d *buildDir) sandboxSpec {
	return sandboxSpec{envDir: d.venv, envRW: true, tmpDir: d.work, etcDir: d.etc, uid: d.uid,
		outputLimit: 1 << 20, limits: limits{nproc: int64(b.cfg.MaxProcs), nofile: 4096, fsize: max(b.cfg.BuildDisk, 0)},
		cgroup: b.runCgroupLimits(max(b.cfg.BuildMemory, 0), 0)}
}

// createVenv makes the virtual environment, with the system site-packages.
func (b *Backend) createVenv(ctx context.Context, base sandboxSpec) error {
	mk := base
	mk.argv = []string{b.py.Executable, "-I", "-m", "venv", "--system-site-packages", "--without-pip", envMount}
	mk.timeout = remaining(ctx, 2*time.Minute)
	res, err := b.exec(ctx, &mk)
	if err == nil && (res.exitCode != 0 || res.timedOut) {
		err = fmt.Errorf("exit code %d: %s", res.exitCode, trim.Tail(string(res.stdout)+string(res.stderr), 4096))
	}
	return err
}

// pipInstall installs the missing packages into the venv and returns what
// was fetched. pip runs behind the egress forwarder, in a sandbox whose only
// way out is a Session of the worker's egress proxy; a failure becomes the
// error the caller acts on (classifyPipFailure).
func (b *Backend) pipInstall(ctx context.Context, id string, base sandboxSpec, missing []string, log *strings.Builder) ([]sandbox.Artifact, error) {
	sess, closeSession, err := b.egress.ListenInTempDir()
	if err != nil {
		return nil, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	defer closeSession()
	pip := base
	pip.egress = sess.Path
	var argv []string
	argv, pip.env, pip.extraRO = b.pipCommand(missing)
	pip.argv = egress.ForwarderArgv(b.py.Executable, "/tmp/"+pipReport, argv)
	pip.extraEtc = b.pipConfigs()
	pip.timeout = remaining(ctx, b.cfg.BuildTimeout)
	fmt.Fprintf(log, "pip install %s\n", strings.Join(missing, " "))
	pctx, stopPip := context.WithCancelCause(ctx)
	defer stopPip(nil)
	stopWatch := watchDisk(pctx, stopPip, b.cfg.BuildDisk, base.envDir, base.tmpDir)
	res, err := b.exec(pctx, &pip)
	stopWatch()
	closeSession()
	if over := context.Cause(pctx); errors.Is(over, errBuildDisk) {
		return nil, fmt.Errorf("sandbox: build %s: pip: %w", id, over)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: build %s: pip: %w", id, err)
	}
	reported, stdout := egress.ParseProvenance(string(res.stdout))
	pipLog := stdout + string(res.stderr)
	if denied := sess.Denied(); len(denied) > 0 {
		pipLog += fmt.Sprintf("\negress proxy refused (not package sources): %s\n", strings.Join(denied, " "))
	}
	log.WriteString(trim.HeadTail(pipLog, 16<<10))
	if res.timedOut {
		return nil, fmt.Errorf("sandbox: build %s: pip install timed out after %s", id, pip.timeout)
	}
	if res.exitCode != 0 {
		fetch := fetchFailures(base.tmpDir)
		if fetch != "" {
			log.WriteString("\n" + fetch)
		}
		return nil, classifyPipFailure(id, missing, pipLog+"\n"+fetch, log.String())
	}
	return egress.Merge(reported, sess.Artifacts()), nil
}

// installEnv marks the finished venv with its record and renames it into
// place, or returns the environment another process finished first.
func (b *Backend) installEnv(venv string, rec envRecord) (sandbox.Env, error) {
	if err := b.chownTree(venv, 0); err != nil { // runs must not own (and so chmod) it
		return sandbox.Env{}, fmt.Errorf("sandbox: build %s: %w", rec.ID, err)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return sandbox.Env{}, fmt.Errorf("sandbox: build %s: %w", rec.ID, err)
	}
	if err := os.WriteFile(filepath.Join(venv, envMarker), data, 0o644); err != nil {
		return sandbox.Env{}, fmt.Errorf("sandbox: build %s: %w", rec.ID, err)
	}
	if err := os.Rename(venv, filepath.Join(b.envsDir, rec.ID)); err != nil {
		// Another process finished the same build first: use theirs.
		if env, ok := b.lookupEnv(rec.ID); ok {
			return env, nil
		}
		return sandbox.Env{}, fmt.Errorf("sandbox: build %s: %w", rec.ID, err)
	}
	return sandbox.Env{ID: rec.ID, Log: rec.Log, Provenance: rec.Provenance}, nil
}

// remaining is the time left before ctx's deadline, at most limit.
func remaining(ctx context.Context, limit time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(min(time.Until(dl), limit), time.Second)
	}
	return limit
}

// pipURLVars are pip's environment variables that name package sources:
// their URLs are allowed by the egress proxy and shown to pip without
// credentials.
var pipURLVars = []string{"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"}

// pipSources are the URLs a build may fetch from: the configured index and
// find-links, the URLs in PipExtraArgs, pip's PIP_INDEX_URL,
// PIP_EXTRA_INDEX_URL and PIP_FIND_LINKS unless PipIsolated, and PyPI when
// no index is configured at all. pip.conf's are not read: a source named
// only there is refused.
func pipSources(cfg Config) []string {
	src := append([]string{cfg.PipIndexURL}, cfg.PipFindLinks...)
	for _, a := range cfg.PipExtraArgs {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v
		}
		src = append(src, a)
	}
	envIndex := false
	if !cfg.PipIsolated {
		for _, k := range pipURLVars {
			src = append(src, strings.Fields(os.Getenv(k))...)
		}
		envIndex = os.Getenv("PIP_INDEX_URL") != ""
	}
	if cfg.PipIndexURL == "" && len(cfg.PipFindLinks) == 0 && !envIndex {
		src = append(src, egress.PyPISources...)
	}
	return src
}

// sandboxArg is a pip argument as the sandbox sees it: a source URL in it
// (alone or after "--option=") without credentials (egress.SandboxURL).
func (b *Backend) sandboxArg(a string) string {
	if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
		return k + "=" + b.egress.SandboxURL(v)
	}
	return b.egress.SandboxURL(a)
}

// pipCommand is the pip invocation (its --proxy is egress.ProxyPlaceholder),
// its environment and the host paths it needs to see (local wheel
// directories, certificate and config files). No credential is in any of
// them: the egress proxy keeps the sources' and the upstream proxy's.
func (b *Backend) pipCommand(pkgs []string) (argv []string, env map[string]string, ro []string) {
	// --log: only pip's debug log says why an index page could not be
	// fetched; without it an unreachable index looks like a missing package.
	argv = []string{b.py.Executable, "-I", "-m", "pip", "--python", sandboxPython, "install",
		"--log", "/tmp/" + pipDebugLog, "--proxy", egress.ProxyPlaceholder, "--report", "/tmp/" + pipReport,
		"--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--no-cache-dir"}
	env = map[string]string{}
	if b.cfg.PipIsolated {
		argv = append(argv, "--isolated")
		env["PIP_CONFIG_FILE"] = os.DevNull
	} else {
		env, ro = b.pipEnv()
	}
	// TLS to the sources is pip's own (through CONNECT tunnels): it needs
	// the certificates that configure it.
	for _, k := range []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
			ro = append(ro, absPaths(v)...)
		}
	}
	for _, h := range b.egress.TrustedHosts() {
		argv = append(argv, "--trusted-host", h)
	}
	if b.cfg.PipIndexURL != "" {
		argv = append(argv, "--index-url", b.egress.SandboxURL(b.cfg.PipIndexURL))
		ro = append(ro, absPaths(b.cfg.PipIndexURL)...)
	} else if len(b.cfg.PipFindLinks) > 0 {
		argv = append(argv, "--no-index")
	}
	for _, fl := range b.cfg.PipFindLinks {
		argv = append(argv, "--find-links", b.egress.SandboxURL(fl))
		ro = append(ro, absPaths(fl)...)
	}
	for _, a := range b.cfg.PipExtraArgs {
		argv = append(argv, b.sandboxArg(a))
	}
	argv = append(argv, "--")
	return append(argv, pkgs...), env, ro
}

// pipEnv is the worker's PIP_* variables for a non-isolated pip: source
// URLs without credentials, and no PIP_PROXY (the egress proxy is pip's).
// A client certificate (its key) never enters a build, nor a config file
// that holds credentials.
func (b *Backend) pipEnv() (env map[string]string, ro []string) {
	env = map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "PIP_") || k == "PIP_PROXY" || k == "PIP_CLIENT_CERT" {
			continue
		}
		if k == "PIP_CONFIG_FILE" && v != os.DevNull && !credentialFree(v) {
			b.log.Warn("PIP_CONFIG_FILE holds credentials: builds run without it (give the index with AUTOCODER_PIP_INDEX_URL)", "file", v)
			continue
		}
		if slices.Contains(pipURLVars, k) {
			fields := strings.Fields(v)
			for i, f := range fields {
				fields[i] = b.egress.SandboxURL(f)
			}
			v = strings.Join(fields, " ")
		}
		env[k] = v
		ro = append(ro, absPaths(v)...)
	}
	return env, ro
}

// absPaths returns the existing absolute paths in a setting's value
// (whitespace-separated, file: URLs included), to bind into the build.
func absPaths(v string) []string {
	var out []string
	for _, f := range strings.Fields(v) {
		f = strings.TrimPrefix(f, "file://")
		if filepath.IsAbs(f) {
			if _, err := os.Stat(f); err == nil {
				out = append(out, filepath.Clean(f))
			}
		}
	}
	return out
}

var (
	pipNotFoundRe = regexp.MustCompile(`(?:No matching distribution found for|Could not find a version that satisfies the requirement) (\S+)`)
	pipNetworkRe  = regexp.MustCompile(`NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|` +
		`Name or service not known|ConnectTimeoutError|ReadTimeoutError|ProxyError|SSLError|Network is unreachable|` +
		`No route to host|Connection refused|Connection reset|\b5\d\d Server Error|Max retries exceeded|connection error:`)
	pipUntrustedRe = regexp.MustCompile(`repository located at (\S+) is not a trusted or secure host`)
	pipIgnoredRe   = regexp.MustCompile(`Location '([^']+)' is ignored`)
)

// pipDebugLog is pip's --log file, in the build's /tmp.
const pipDebugLog = "pip-debug.log"

// pipReport is pip's --report file, in the build's /tmp: the forwarder
// prints the provenance lines from it, then removes it.
const pipReport = "pip-report.json"

// fetchFailures returns the "Could not fetch URL" lines of pip's debug log
// in the build's work dir (read without following links: a package's
// setup.py may have run there).
func fetchFailures(work string) string {
	root, err := os.OpenRoot(work)
	if err != nil {
		return ""
	}
	defer root.Close()
	data, ok := readRegular(root, pipDebugLog, 64<<20)
	if !ok {
		return ""
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if _, rest, ok := strings.Cut(line, "Could not fetch URL "); ok && len(lines) < 20 {
			lines = append(lines, trim.Head("Could not fetch URL "+rest, 600))
		}
	}
	return strings.Join(lines, "\n")
}

// classifyPipFailure turns pip's output into the error the caller acts on:
// an *InvalidPackageError for names the index does not have, a plain
// (retryable) error when the index could not be reached, ErrBuildFailed for
// the rest.
func classifyPipFailure(id string, requested []string, pipLog, buildLog string) error {
	if m := pipUntrustedRe.FindStringSubmatch(pipLog); m != nil {
		return fmt.Errorf("sandbox: build %s: pip ignored the index at %s as untrusted: use https, or pass "+
			"--trusted-host %s in bwrap.Config.PipExtraArgs", id, m[1], m[1])
	}
	if m := pipIgnoredRe.FindStringSubmatch(pipLog); m != nil {
		return fmt.Errorf("sandbox: build %s: pip could not use the find-links location %s", id, m[1])
	}
	if pipNetworkRe.MatchString(pipLog) {
		return fmt.Errorf("sandbox: build %s: pip could not reach the package index: %s", id, trim.Tail(pipLog, 2048))
	}
	if m := pipNotFoundRe.FindAllStringSubmatch(pipLog, -1); len(m) > 0 {
		var bad []string
		seen := map[string]bool{}
		for _, sm := range m {
			name := protocol.CanonicalName(sm[1])
			// A requested package, or else the dependency pip could not find.
			found := false
			for _, r := range requested {
				if protocol.CanonicalName(r) == name && !seen[r] {
					bad, seen[r], found = append(bad, r), true, true
				}
			}
			if !found && !seen[name] && !containsName(requested, name) {
				bad, seen[name] = append(bad, sm[1]), true
			}
		}
		if len(bad) > 0 {
			return &sandbox.InvalidPackageError{Packages: bad, Log: buildLog}
		}
	}
	return fmt.Errorf("%w: %s: pip install failed: %s", sandbox.ErrBuildFailed, id, trim.Tail(pipLog, 4096))
}

func containsName(pkgs []string, name string) bool {
	for _, p := range pkgs {
		if protocol.CanonicalName(p) == name {
			return true
		}
	}
	return false
}

// missingScript prints the requirements (argv[1], JSON) the interpreter
// does not satisfy, extras included, one level deep.
const missingScript = `
import json, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except Exception:
    try:
        from pip._vendor.packaging.requirements import Requirement
    except Exception:
        Requirement = None

def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

def ok(req):
    v = version(req.name)
    return v is not None and (not req.specifier or req.specifier.contains(v, prereleases=True))

def satisfied(s):
    if Requirement is None:
        return all(c not in s for c in "[<>=!~") and version(s) is not None
    r = Requirement(s)
    if not ok(r):
        return False
    for extra in r.extras:
        for dep in metadata.distribution(r.name).requires or []:
            d = Requirement(dep)
            if d.marker is not None and d.marker.evaluate({"extra": extra}) and not ok(d):
                return False
    return True

print(json.dumps([p for p in json.loads(sys.argv[1]) if not satisfied(p)]))
`

// missingPackages returns the packages the base interpreter does not
// satisfy. It runs on the host: the base interpreter and its
// site-packages are the system's own, and -I keeps the worker's PYTHON*
// variables and user site out.
func (b *Backend) missingPackages(ctx context.Context, pkgs []string) ([]string, error) {
	if len(pkgs) == 0 {
		return nil, nil
	}
	arg, err := json.Marshal(pkgs)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, b.py.Executable, "-I", "-c", missingScript, string(arg))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: check installed packages: %w: %s", err, trim.Tail(stderr.String(), 2048))
	}
	var missing []string
	if err := json.Unmarshal(out, &missing); err != nil {
		return nil, fmt.Errorf("sandbox: check installed packages: %w", err)
	}
	return missing, nil
}

func without(all, drop []string) []string {
	d := map[string]bool{}
	for _, x := range drop {
		d[x] = true
	}
	var out []string
	for _, x := range all {
		if !d[x] {
			out = append(out, x)
		}
	}
	return out
}

var aptNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?$`)

// checkSystemPackages fails unless every apt package is installed on the
// host: the process backend shares the host's /usr and cannot install any.
func checkSystemPackages(ctx context.Context, pkgs []string) error {
	if len(pkgs) == 0 {
		return nil
	}
	var bad []string
	for _, p := range pkgs {
		if !aptNameRe.MatchString(p) {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		return &sandbox.InvalidPackageError{Packages: bad, Log: "not a Debian package name"}
	}
	installed := map[string]bool{}
	if _, err := exec.LookPath("dpkg-query"); err == nil {
		cmd := exec.CommandContext(ctx, "dpkg-query", append([]string{"-W", "-f=${Package} ${db:Status-Status}\n"}, pkgs...)...)
		out, _ := cmd.Output() // exit 1 when some are unknown; the output still lists the rest
		for _, line := range strings.Split(string(out), "\n") {
			if name, status, ok := strings.Cut(line, " "); ok && status == "installed" {
				installed[name] = true
			}
		}
	}
	var missing []string
	for _, p := range pkgs {
		name, _, _ := strings.Cut(p, ":")
		if !installed[name] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: the process backend cannot install system packages, and these are not installed on this host: %s "+
			"(install them on the host, or use the docker backend)", sandbox.ErrBuildFailed, strings.Join(missing, " "))
	}
	return nil
}

// pipConfigs are the /etc entries of pip's configuration a build sees
// (buildEtc): those that exist and hold no credentials. Build code reads
// whatever is bound into its sandbox and may leave it in the environment,
// where a later run can print it: an index URL's user:password belongs in
// AUTOCODER_PIP_INDEX_URL, which the egress proxy keeps.
func (b *Backend) pipConfigs() []string {
	var out []string
	for _, e := range buildEtc {
		if credentialFree("/etc/" + e) {
			out = append(out, e)
		} else {
			b.log.Warn("pip configuration holds credentials: builds run without it (give the index with AUTOCODER_PIP_INDEX_URL)", "path", "/etc/"+e)
		}
	}
	return out
}

// pipCredential matches what gives a pip configuration away as holding a
// secret: a URL with user information, or a client certificate setting.
var pipCredential = regexp.MustCompile(`(?i)://[^/\s@]+@|client[-_]cert`)

// credentialFree reports whether the file, or every file under the
// directory, at path holds no credential pipCredential finds. A path that
// does not exist is free of them; one that cannot be read is not.
func credentialFree(path string) bool {
	free := true
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if pipCredential.Match(data) {
			free = false
			return fs.SkipAll
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return free && err == nil
}

// errBuildDisk is the cause a build is stopped with when it writes more
// than Config.BuildDisk.
var errBuildDisk = errors.New("the build wrote more to disk than its cap (BuildDisk)")

// buildDiskEvery is how often watchDisk measures a build's directories.
const buildDiskEvery = time.Second

// watchDisk measures dirs every buildDiskEvery until stop is called, and
// stops the build (cancel, with errBuildDisk) once they hold more than
// limit bytes together. RLIMIT_FSIZE bounds each file at once; this bounds
// their sum, within a second's writing. A limit of 0 or less watches
// nothing.
func watchDisk(ctx context.Context, cancel context.CancelCauseFunc, limit int64, dirs ...string) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(buildDiskEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if n := diskUse(dirs...); n > limit {
					cancel(fmt.Errorf("%w: %s written, the cap is %s", errBuildDisk, messages.FormatBytes(n), messages.FormatBytes(limit)))
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// diskUse is the bytes the regular files under dirs take.
func diskUse(dirs ...string) int64 {
	var n int64
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
			return nil
		})
	}
	return n
}
