package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/protocol"
	"github.com/autocoder/autocoder/pkg/messages"
)

// builderVersion is part of every Env.ID: bump it when the layout of an
// environment changes, so old ones are not reused.
const builderVersion = 1

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
}

var envIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Build makes (or reuses) a virtual environment with spec.Packages.
//
// Names are validated first (an *InvalidPackageError for URLs, paths,
// options and the like). Packages the base interpreter already has, at a
// satisfying version, are not installed again; the rest are installed by
// pip, which runs in a sandbox that has the network but nothing of the
// host's secrets. The environment is built in a temporary directory and
// renamed into place, so concurrent builds of the same spec, in this process
// or others sharing StateDir, are safe.
//
// SystemPackages cannot be installed by this backend: Build checks with
// dpkg that each is already installed on the host (and so visible through
// /usr), and fails with ErrBuildFailed naming the ones that are not.
func (p *Process) Build(ctx context.Context, spec EnvSpec) (Env, error) {
	if p.isClosed() {
		return Env{}, ErrClosed
	}
	pkgs, err := NormalizePackages(spec.Packages)
	if err != nil {
		return Env{}, err
	}
	if err := ctx.Err(); err != nil {
		return Env{}, fmt.Errorf("sandbox: build: %w", err)
	}
	if err := checkSystemPackages(ctx, spec.SystemPackages); err != nil {
		return Env{}, err
	}
	id := p.envID(pkgs)
	if env, ok := p.lookupEnv(id); ok {
		return env, nil
	}
	return p.flight.Do(ctx, id, func(ctx context.Context) (Env, error) {
		if env, ok := p.lookupEnv(id); ok {
			return env, nil
		}
		start := time.Now()
		env, err := p.build(ctx, id, pkgs)
		p.log.Info("sandbox build", "env", id, "packages", strings.Join(pkgs, " "),
			"duration", time.Since(start), "err", err)
		return env, err
	})
}

// envID hashes what an environment is made of.
func (p *Process) envID(pkgs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "autocoder process env\nbuilder %d\npython %s\nversion %s\n", builderVersion, p.py.Executable, p.py.Version)
	for _, pkg := range pkgs {
		fmt.Fprintf(h, "package %s\n", pkg)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// envDir returns the directory of a built environment.
func (p *Process) envDir(id string) (string, error) {
	if !envIDRe.MatchString(id) {
		return "", fmt.Errorf("%w: %q is not a process backend environment id", ErrEnvNotFound, id)
	}
	dir := filepath.Join(p.envsDir, id)
	if _, err := os.Stat(filepath.Join(dir, envMarker)); err != nil {
		return "", fmt.Errorf("%w: %s (build it on this worker first)", ErrEnvNotFound, id)
	}
	return dir, nil
}

func (p *Process) lookupEnv(id string) (Env, bool) {
	data, err := os.ReadFile(filepath.Join(p.envsDir, id, envMarker))
	if err != nil {
		return Env{}, false
	}
	var rec envRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.ID != id {
		return Env{}, false
	}
	return Env{ID: id, Log: rec.Log}, true
}

func (p *Process) build(ctx context.Context, id string, pkgs []string) (Env, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.BuildTimeout)
	defer cancel()
	var log strings.Builder
	fmt.Fprintf(&log, "python: %s (%s)\n", p.py.Executable, firstLine(p.py.Version))

	missing, err := p.missingPackages(ctx, pkgs)
	if err != nil {
		return Env{}, err
	}
	if have := len(pkgs) - len(missing); have > 0 {
		fmt.Fprintf(&log, "already installed in the base interpreter: %s\n", strings.Join(without(pkgs, missing), " "))
	}
	if len(missing) > 0 && p.cfg.PipDisabled {
		return Env{}, &InvalidPackageError{Packages: missing,
			Log: log.String() + "not installed in the base interpreter, and pip is disabled (ProcessConfig.PipDisabled)\n"}
	}
	if len(missing) > 0 && !p.py.Pip {
		return Env{}, fmt.Errorf("%w: %s has no pip to install %s (install python3-pip)",
			ErrBuildFailed, p.py.Executable, strings.Join(missing, " "))
	}

	tmp, err := os.MkdirTemp(p.envsDir, ".tmp-"+id+"-")
	if err != nil {
		return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	defer os.RemoveAll(tmp)
	venv, work, etc := filepath.Join(tmp, "venv"), filepath.Join(tmp, "work"), filepath.Join(tmp, "etc")
	for _, d := range []string{venv, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
		}
	}
	uid := p.takeUID()
	defer p.releaseUID(uid)
	if err := writeEtc(etc, p.sandboxUID(uid)); err != nil {
		return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	for _, d := range []string{venv, work} {
		if err := p.chownTree(d, uid); err != nil {
			return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
		}
	}

	// The venv is made inside the sandbox, at the path runs will see it, so
	// that pyvenv.cfg and the scripts pip writes name /opt/venv. Builds get
	// a cgroup too (memory and processes, no CPU quota): pip runs packages'
	// build code, which is as untrusted as the names it came from.
	base := sandboxSpec{envDir: venv, envRW: true, tmpDir: work, etcDir: etc, uid: uid,
		outputLimit: 1 << 20, limits: limits{nproc: int64(p.cfg.MaxProcs), nofile: 4096},
		cgroup: p.runCgroupLimits(max(p.cfg.BuildMemory, 0), 0)}
	mk := base
	mk.argv = []string{p.py.Executable, "-I", "-m", "venv", "--system-site-packages", "--without-pip", envMount}
	mk.timeout = remaining(ctx, 2*time.Minute)
	res, err := p.exec(ctx, &mk)
	if err == nil && (res.exitCode != 0 || res.timedOut) {
		err = fmt.Errorf("exit code %d: %s", res.exitCode, TrimTail(string(res.stdout)+string(res.stderr), 4096))
	}
	if err != nil {
		return Env{}, fmt.Errorf("sandbox: build %s: create venv: %w", id, err)
	}

	if len(missing) > 0 {
		pip := base
		pip.network = true
		pip.argv, pip.env, pip.extraRO = p.pipCommand(missing)
		pip.extraEtc = buildEtc
		pip.timeout = remaining(ctx, p.cfg.BuildTimeout)
		fmt.Fprintf(&log, "pip install %s\n", strings.Join(missing, " "))
		res, err := p.exec(ctx, &pip)
		if err != nil {
			return Env{}, fmt.Errorf("sandbox: build %s: pip: %w", id, err)
		}
		pipLog := string(res.stdout) + string(res.stderr)
		log.WriteString(TrimHeadTail(pipLog, 16<<10))
		if res.timedOut {
			return Env{}, fmt.Errorf("sandbox: build %s: pip install timed out after %s", id, pip.timeout)
		}
		if res.exitCode != 0 {
			fetch := fetchFailures(work)
			if fetch != "" {
				log.WriteString("\n" + fetch)
			}
			return Env{}, classifyPipFailure(id, missing, pipLog+"\n"+fetch, log.String())
		}
	}

	if err := p.chownTree(venv, 0); err != nil { // runs must not own (and so chmod) it
		return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	rec := envRecord{ID: id, Python: p.py.Executable, Version: p.py.Version, Packages: pkgs,
		Installed: missing, Log: log.String(), BuiltAt: time.Now().UTC()}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	if err := os.WriteFile(filepath.Join(venv, envMarker), data, 0o644); err != nil {
		return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	if err := os.Rename(venv, filepath.Join(p.envsDir, id)); err != nil {
		// Another process finished the same build first: use theirs.
		if env, ok := p.lookupEnv(id); ok {
			return env, nil
		}
		return Env{}, fmt.Errorf("sandbox: build %s: %w", id, err)
	}
	return Env{ID: id, Log: rec.Log}, nil
}

// remaining is the time left before ctx's deadline, at most limit.
func remaining(ctx context.Context, limit time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(min(time.Until(dl), limit), time.Second)
	}
	return limit
}

// pipCommand is the pip invocation, its environment and the host paths it
// needs to see (local wheel directories, certificate and config files).
func (p *Process) pipCommand(pkgs []string) (argv []string, env map[string]string, ro []string) {
	// --log: only pip's debug log says why an index page could not be
	// fetched; without it an unreachable index looks like a missing package.
	argv = []string{p.py.Executable, "-I", "-m", "pip", "--python", sandboxPython, "install",
		"--log", "/tmp/" + pipDebugLog,
		"--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--no-cache-dir"}
	env = map[string]string{}
	if p.cfg.PipIsolated {
		argv = append(argv, "--isolated")
		env["PIP_CONFIG_FILE"] = os.DevNull
	} else {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "PIP_") {
				env[k] = v
				ro = append(ro, absPaths(v)...)
			}
		}
	}
	// The network plumbing pip needs whatever configures it.
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
		"no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
			ro = append(ro, absPaths(v)...)
		}
	}
	if p.cfg.PipIndexURL != "" {
		argv = append(argv, "--index-url", p.cfg.PipIndexURL)
		ro = append(ro, absPaths(p.cfg.PipIndexURL)...)
	} else if len(p.cfg.PipFindLinks) > 0 {
		argv = append(argv, "--no-index")
	}
	for _, fl := range p.cfg.PipFindLinks {
		argv = append(argv, "--find-links", fl)
		ro = append(ro, absPaths(fl)...)
	}
	argv = append(argv, p.cfg.PipExtraArgs...)
	argv = append(argv, "--")
	return append(argv, pkgs...), env, ro
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
			lines = append(lines, TrimHead("Could not fetch URL "+rest, 600))
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
			"--trusted-host %s in ProcessConfig.PipExtraArgs", id, m[1], m[1])
	}
	if m := pipIgnoredRe.FindStringSubmatch(pipLog); m != nil {
		return fmt.Errorf("sandbox: build %s: pip could not use the find-links location %s", id, m[1])
	}
	if pipNetworkRe.MatchString(pipLog) {
		return fmt.Errorf("sandbox: build %s: pip could not reach the package index: %s", id, TrimTail(pipLog, 2048))
	}
	if m := pipNotFoundRe.FindAllStringSubmatch(pipLog, -1); len(m) > 0 {
		var bad []string
		seen := map[string]bool{}
		for _, sm := range m {
			name := CanonicalName(sm[1])
			// A requested package, or else the dependency pip could not find.
			found := false
			for _, r := range requested {
				if CanonicalName(r) == name && !seen[r] {
					bad, seen[r], found = append(bad, r), true, true
				}
			}
			if !found && !seen[name] && !containsName(requested, name) {
				bad, seen[name] = append(bad, sm[1]), true
			}
		}
		if len(bad) > 0 {
			return &InvalidPackageError{Packages: bad, Log: buildLog}
		}
	}
	return fmt.Errorf("%w: %s: pip install failed: %s", ErrBuildFailed, id, TrimTail(pipLog, 4096))
}

func containsName(pkgs []string, name string) bool {
	for _, p := range pkgs {
		if CanonicalName(p) == name {
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
func (p *Process) missingPackages(ctx context.Context, pkgs []string) ([]string, error) {
	if len(pkgs) == 0 {
		return nil, nil
	}
	arg, err := json.Marshal(pkgs)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p.py.Executable, "-I", "-c", missingScript, string(arg))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: check installed packages: %w: %s", err, TrimTail(stderr.String(), 2048))
	}
	var missing []string
	if err := json.Unmarshal(out, &missing); err != nil {
		return nil, fmt.Errorf("sandbox: check installed packages: %w", err)
	}
	return missing, nil
}

// CanonicalName is the PEP 503 normalized distribution name of a requirement.
func CanonicalName(req string) string {
	name := req
	if i := strings.IndexAny(req, "[<>=!~"); i >= 0 {
		name = req[:i]
	}
	return protocol.CanonicalName(name)
}

// NormalizePackages validates requirement strings and returns them
// canonical (normalized name, sorted extras), deduplicated and sorted, so
// equivalent specs hash alike.
func NormalizePackages(pkgs []string) ([]string, error) {
	var bad []string
	set := map[string]bool{}
	for _, p := range pkgs {
		p = strings.TrimSpace(p)
		if !messages.PackageNameRe.MatchString(p) {
			bad = append(bad, p)
			continue
		}
		name := CanonicalName(p)
		rest := strings.TrimLeft(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			extras := strings.Split(rest[1:end], ",")
			for i, e := range extras {
				extras[i] = CanonicalName(e)
			}
			sort.Strings(extras)
			name += "[" + strings.Join(extras, ",") + "]"
			rest = rest[end+1:]
		}
		set[name+rest] = true
	}
	if len(bad) > 0 {
		return nil, &InvalidPackageError{Packages: bad,
			Log: "not a package requirement (a PEP 508 name with an optional version; URLs, paths, options and shell syntax are refused)"}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
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
		return &InvalidPackageError{Packages: bad, Log: "not a Debian package name"}
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
			"(install them on the host, or use the docker backend)", ErrBuildFailed, strings.Join(missing, " "))
	}
	return nil
}
