package bwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/sandbox/egress"
)

// innerUID is the uid inside the sandbox when bubblewrap maps one user
// namespace uid to the (non-root) worker's uid.
const innerUID = 1000

// hostEtc are the /etc entries a sandbox sees: what the dynamic linker,
// Python and common libraries read, and nothing with secrets or host
// identity. passwd, group, hosts and nsswitch.conf are synthesized.
var hostEtc = []string{
	"alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
	"python3", "python3.9", "python3.10", "python3.11", "python3.12", "python3.13", "python3.14",
	"matplotlibrc", "fonts", "mime.types", "magic", "magic.mime", "mailcap", "protocols", "services",
	"ssl", "pki", "ca-certificates", "ca-certificates.conf", "xml", "os-release", "debian_version",
	"lsb-release", "gai.conf", "ImageMagick-6", "ImageMagick-7", "R",
}

// buildEtc are the extra /etc entries a build sees: pip's configuration
// (a build has no network, only the egress proxy, so no resolver files).
var buildEtc = []string{"pip.conf", "xdg/pip"}

// topLevel are the root entries that are symlinks into /usr on merged-/usr
// systems and directories elsewhere.
var topLevel = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// args builds bubblewrap's options. Order matters: mounts are made in
// order, and / is made read-only after everything is in place.
func (b *Backend) args(s *sandboxSpec) []string {
	a := &bwrapArgs{made: map[string]bool{"/": true}}
	a.namespaces(b.root)
	a.add("--hostname", "sandbox", "--die-with-parent", "--new-session", "--json-status-fd", "3", "--clearenv",
		"--seccomp", "5") // seccomp.go: no nested user namespaces
	a.environment(s.env)
	a.systemDirs()
	a.etc(s)
	a.add("--proc", "/proc", "--dev", "/dev")
	a.tmp(b.cfg.TmpSize, s.tmpDir)
	// After /tmp, so that a path under /tmp is not hidden by its mount.
	a.pythonPrefixes(b.py.Prefixes)
	a.extraReadOnly(append(append([]string{}, b.cfg.ExtraReadOnly...), s.extraRO...))
	a.venv(s.envDir, s.envRW)
	a.egressSocket(s.egress)
	a.runDirs(s)
	a.add("--remount-ro", "/")
	a.capabilities(b.root, s.zygote)
	return a.list
}

// bwrapArgs accumulates bubblewrap's options, one group of them per method.
type bwrapArgs struct {
	list []string
	// made are the directories created so far with --dir (and "/").
	made map[string]bool
}

func (a *bwrapArgs) add(args ...string) { a.list = append(a.list, args...) }

// mkdirAll creates dir and its missing parents. Directories bubblewrap
// creates on its own for mount points are mode 0700 when it runs as root,
// which the run's uid could not traverse: every mount point's parents are
// created first, world-traversable.
func (a *bwrapArgs) mkdirAll(dir string) {
	var missing []string
	for d := dir; !a.made[d] && !underSystemDirs(d); d = filepath.Dir(d) {
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		a.add("--perms", "0755", "--dir", missing[i])
		a.made[missing[i]] = true
	}
}

// bindParents creates the parents of a mount point.
func (a *bwrapArgs) bindParents(target string) { a.mkdirAll(filepath.Dir(target)) }

// namespaces unshares everything but what the sandbox needs. No sandbox
// shares the host's network, builds included: their way out is the egress
// proxy's socket.
func (a *bwrapArgs) namespaces(root bool) {
	if root {
		// No user namespace: the command then runs as a real, unprivileged
		// host uid (setpriv in command), which is what makes RLIMIT_NPROC
		// hold; a namespace would map it back to host root, which the
		// kernel exempts. The other namespaces are --unshare-all's.
		a.add("--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net")
		return
	}
	a.add("--unshare-all", "--unshare-user", "--disable-userns",
		"--uid", strconv.Itoa(innerUID), "--gid", strconv.Itoa(innerUID))
}

// egressSocket binds a build's egress proxy socket (read-write: connecting
// to a socket is a write).
func (a *bwrapArgs) egressSocket(socket string) {
	if socket == "" {
		return
	}
	a.bindParents(egress.SocketPath)
	a.add("--bind", socket, egress.SocketPath)
}

// environment sets the sandbox's whole environment (see sandboxEnv).
func (a *bwrapArgs) environment(extra map[string]string) {
	for _, kv := range sandboxEnv(extra) {
		k, v, _ := strings.Cut(kv, "=")
		a.add("--setenv", k, v)
	}
}

// systemDirs binds /usr read-only, and the root entries (/bin, /lib...)
// as the host has them: symlinks into /usr, or directories.
func (a *bwrapArgs) systemDirs() {
	a.add("--ro-bind", "/usr", "/usr")
	for _, name := range topLevel {
		host := "/" + name
		fi, err := os.Lstat(host)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(host); err == nil {
				a.add("--symlink", target, host)
			}
		case fi.IsDir():
			a.add("--ro-bind", host, host)
		}
	}
}

// etc binds the host's harmless /etc entries and the synthesized ones.
func (a *bwrapArgs) etc(s *sandboxSpec) {
	for _, e := range append(append([]string{}, hostEtc...), s.extraEtc...) {
		a.bindParents("/etc/" + e)
		a.add("--ro-bind-try", "/etc/"+e, "/etc/"+e)
	}
	if s.etcDir == "" {
		return
	}
	for _, f := range []string{"passwd", "group", "hosts", "nsswitch.conf"} {
		a.add("--ro-bind", filepath.Join(s.etcDir, f), "/etc/"+f)
	}
}

// tmp mounts size-capped tmpfs at /dev/shm and /tmp, or binds a build's
// disk-backed tmpDir at /tmp.
func (a *bwrapArgs) tmp(tmpSize int64, tmpDir string) {
	a.add("--perms", "1777", "--size", strconv.FormatInt(min(tmpSize, 64<<20), 10), "--tmpfs", "/dev/shm")
	if tmpDir != "" {
		a.add("--bind", tmpDir, "/tmp")
		return
	}
	a.add("--perms", "1777", "--size", strconv.FormatInt(tmpSize, 10), "--tmpfs", "/tmp")
}

// pythonPrefixes binds the base interpreter's prefixes that /usr does not
// already hold.
func (a *bwrapArgs) pythonPrefixes(prefixes []string) {
	for _, prefix := range prefixes {
		if !underSystemDirs(prefix) {
			a.bindParents(prefix)
			a.add("--ro-bind", prefix, prefix)
		}
	}
}

// extraReadOnly binds more host paths read-only at the same place, when
// they exist.
func (a *bwrapArgs) extraReadOnly(paths []string) {
	for _, path := range paths {
		a.bindParents(path)
		a.add("--ro-bind-try", path, path)
	}
}

// venv binds the environment at /opt/venv: read-write for its build,
// read-only for runs.
func (a *bwrapArgs) venv(envDir string, rw bool) {
	if envDir == "" {
		return
	}
	a.bindParents(envMount)
	if rw {
		a.add("--bind", envDir, envMount)
	} else {
		a.add("--ro-bind", envDir, envMount)
	}
}

// runDirs binds the inputs, /var/outputs and /workspace, and starts the
// command in /workspace (or / when there is none).
func (a *bwrapArgs) runDirs(s *sandboxSpec) {
	if s.outputs != "" || len(s.inputs) > 0 {
		a.mkdirAll(sandbox.InputsDir)
		for _, m := range s.inputs {
			a.add("--ro-bind", m.src, m.dst)
		}
		if s.outputs != "" {
			a.add("--bind", s.outputs, sandbox.OutputsDir)
		}
	}
	if s.workspace != "" {
		a.add("--bind", s.workspace, sandbox.WorkspaceDir, "--chdir", sandbox.WorkspaceDir)
	} else {
		a.add("--chdir", "/")
	}
}

// capabilities drops them all; as root, setpriv needs three to switch to
// the run's uid, and it then drops every capability, bounding set included.
// A warm runner's zygote keeps those three and what it needs to isolate
// each child before the child drops them all (zygote.py): mounts and
// namespaces, loopback, ownership of the files it writes for the run.
func (a *bwrapArgs) capabilities(root, zygote bool) {
	a.add("--cap-drop", "ALL")
	if root {
		a.add("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")
	}
	if root && zygote {
		a.add("--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_NET_ADMIN", "--cap-add", "CAP_CHOWN",
			"--cap-add", "CAP_FOWNER", "--cap-add", "CAP_DAC_OVERRIDE")
	}
}

// command is what bubblewrap runs: prlimit, then (as root) setpriv, then
// the argv.
func (b *Backend) command(s *sandboxSpec) []string {
	a := []string{b.tools.prlimit, "--core=0"}
	l := s.limits
	for _, r := range []struct {
		flag string
		v    int64
	}{{"--as", l.as}, {"--nproc", l.nproc}, {"--fsize", l.fsize}, {"--nofile", l.nofile}} {
		if r.v > 0 {
			a = append(a, r.flag+"="+strconv.FormatInt(r.v, 10))
		}
	}
	if l.cpu > 0 {
		// SIGXCPU at the soft limit, SIGKILL a second later.
		a = append(a, fmt.Sprintf("--cpu=%d:%d", l.cpu, l.cpu+1))
	}
	a = append(a, "--")
	if b.root && !s.zygote { // a zygote's children drop to their run's uid themselves
		id := strconv.FormatUint(uint64(s.uid), 10)
		a = append(a, b.tools.setpriv, "--reuid="+id, "--regid="+id, "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--")
	}
	argv := s.argv
	if len(argv) > 0 && (argv[0] == "python" || argv[0] == "python3") && s.envDir != "" {
		argv = append([]string{sandboxPython}, argv[1:]...)
	}
	return append(a, argv...)
}

// sandboxEnv is the whole environment of a sandbox, sorted: PATH, HOME and
// LANG, then extra, which wins.
func sandboxEnv(extra map[string]string) []string {
	env := map[string]string{"PATH": sandboxPATH, "HOME": "/tmp", "LANG": "C.UTF-8"}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func underSystemDirs(path string) bool {
	return path == "/usr" || strings.HasPrefix(path, "/usr/")
}
