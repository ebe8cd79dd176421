package docker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/trim"
)

// defaultPATH is a run's PATH when the image sets none.
const defaultPATH = "/usr/local/bin:/usr/bin:/bin"

// stubScript is the init process (pid 1) of every sandbox container. It
// waits, for at most argv[1] seconds, for one JSON request line on stdin
// (argv, env, timeout, output limit, the workspace files, the results
// wanted), answering ping lines (the pool's readiness check) on the way,
// writes the files into /workspace, runs the command as its child with
// exactly that environment in /workspace, reaps orphans, and when the child
// exits kills whatever it left behind, sends the trailers (with the
// results after stdout's: results.go) and exits with the child's status
// (128+signal for a signal).
//
// It caps the output where it is made: of each stream it forwards the first
// limit bytes at once and the last limit bytes at the end, so a run that
// prints 1 GiB sends about 2×limit through the engine (whose attach stream
// is slow) and the worker's head-and-tail buffer still sees the true head
// and tail. SIGUSR1 (the worker's timeout) and its own timer (a backstop
// for a worker that died) make it kill the run, flush the tail, send
// the trailers and exit 124. A container started before its command is known is what makes the
// warm pool possible.
const stubScript = `
import base64, collections, json, os, select, signal, stat, sys, time
def killall():
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
def writeall(fd, data):
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except OSError:
            return
class Stream:
    def __init__(self, fd):
        self.fd = fd
    def write(self, data):
        writeall(self.fd, data)
    def flush(self):
        pass
class Cap:
    def __init__(self, fd, limit):
        self.fd, self.limit, self.head = fd, limit, limit
        self.tail, self.size = collections.deque(), 0
    def write(self, data):
        if self.head > 0:
            n = min(self.head, len(data))
            writeall(self.fd, data[:n])
            self.head -= n
            data = data[n:]
        if data:
            self.tail.append(data)
            self.size += len(data)
            while self.size - len(self.tail[0]) >= self.limit:
                self.size -= len(self.tail.popleft())
    def flush(self):
        data = b"".join(self.tail)
        self.tail.clear()
        writeall(self.fd, data[-self.limit:] if self.limit else b"")
def read_request(deadline):
    # One JSON line; a ping line (the pool's readiness check) is answered
    # and the next one read. What follows the request is the run's stdin.
    buf = bytearray()
    while True:
        end = buf.find(b"\n")
        while end < 0:  # a request with its files can be megabytes: scan only what is new
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([0], [], [], left)[0]:
                return None, None
            chunk = os.read(0, 1048576)
            if not chunk:
                return None, None
            end = chunk.find(b"\n")
            if end >= 0:
                end += len(buf)
            buf += chunk
        line = bytes(buf[:end])
        del buf[:end + 1]
        req = json.loads(line)
        if "ping" not in req:
            return req, buf
        writeall(1, ("\0autocoder-ready:%s\n" % req["ping"]).encode())
def walk_open(root, rel, final_flags):
    # Opens root/rel, never through a symlink on the way or at the end.
    parts = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for d in parts[:-1]:
            nfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nfd
        return os.open(parts[-1], final_flags | os.O_NOFOLLOW, 0o644, dir_fd=fd)
    finally:
        os.close(fd)
def put_files(files):
    # The run's files, as the sandbox user, before anything of the run.
    for name in sorted(files):
        parts = name.split("/")
        for i in range(1, len(parts)):
            try:
                os.mkdir("/workspace/" + "/".join(parts[:i]), 0o755)
            except FileExistsError:
                pass
        fd = walk_open("/workspace", name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            writeall_strict(fd, base64.b64decode(files[name]))
            os.utime(fd, (0, 0))
        finally:
            os.close(fd)
def writeall_strict(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
class Full(Exception):
    pass
def gather(spec):
    # What the run left that the worker asked for, listed (sizes only);
    # send_results streams the contents. The worker applies the caps
    # again: this only spares sending what it would drop.
    files, outs, reads = [], [], []
    budget = spec["budget"]
    for name in spec.get("collect") or []:
        try:
            fd = walk_open("/workspace", name, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if stat.S_ISREG(st.st_mode) and st.st_size <= budget:
            budget -= st.st_size
            files.append({"name": name, "size": st.st_size})
            reads.append(("/workspace", name, st.st_size))
    caps = spec.get("outputs")
    if caps is not None:
        state = {"n": 0, "budget": caps["max_bytes"]}
        top = ""
        def visit(dfd, name, rel):
            if state["n"] >= caps["list_max"]:
                raise Full
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            state["n"] += 1
            if stat.S_ISDIR(st.st_mode):
                outs.append({"path": rel, "kind": "d"})
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
                try:
                    for child in sorted(os.listdir(fd)):
                        visit(fd, child, rel + "/" + child)
                finally:
                    os.close(fd)
            elif stat.S_ISREG(st.st_mode):
                e = {"path": rel, "kind": "f", "size": st.st_size}
                if st.st_size <= state["budget"] and state["n"] <= caps["max_files"]:
                    state["budget"] -= st.st_size
                    e["data"] = True
                    reads.append(("/var/outputs", rel, st.st_size))
                outs.append(e)
            else:
                outs.append({"path": rel, "kind": "o"})
        root = os.open("/var/outputs", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for top in caps.get("names") or sorted(os.listdir(root)):
                try:
                    visit(root, top, top)
                except FileNotFoundError:
                    pass
        except Full:
            outs.append({"path": top, "kind": "x"})
        finally:
            os.close(root)
    return {"files": files, "outputs": outs}, reads
def send_results(nonce, code, spec):
    try:
        head, reads = gather(spec)
    except Exception as e:
        head, reads = {"error": "collect the results: %s" % e}, []
    head = json.dumps(head).encode()
    size = sum(r[2] for r in reads)
    writeall(1, ("\0autocoder-exit:%s:%d:%d:%d\n" % (nonce, code, len(head), size)).encode() + head)
    for root, rel, n in reads:
        # Nothing of the run is alive: a file is as gather saw it; the
        # frame's length holds even if one could not be read whole.
        try:
            fd = walk_open(root, rel, os.O_RDONLY | os.O_NONBLOCK)
            try:
                while n > 0:
                    chunk = os.read(fd, min(n, 1048576))
                    if not chunk:
                        break
                    writeall(1, chunk)
                    n -= len(chunk)
            finally:
                os.close(fd)
        except OSError:
            pass
        writeall(1, b"\0" * n)
def finish(req, code):
    # The trailers: nothing else can write any more. They end both
    # streams, and tell the worker the exit code (and, with the results
    # asked for, what the run left) before the engine notices the exit.
    trailer = ("\0autocoder-exit:%s:%d\n" % (req["nonce"], code)).encode()
    writeall(2, trailer)
    if req.get("results"):
        send_results(req["nonce"], code, req["results"])
    else:
        writeall(1, trailer)
def main():
    req, pending = read_request(time.monotonic() + float(sys.argv[1]))
    if req is None:
        return 125
    if req.get("files"):
        try:
            put_files(req["files"])
        except OSError as e:
            os.write(2, ("sandbox: cannot write the run's files: %s\n" % e).encode())
            req["results"] = None
            finish(req, 126)
            time.sleep(req["linger"])
            return 126
    stdio = req.get("stdio", False)
    in_r = in_w = -1
    if stdio:
        in_r, in_w = os.pipe()
    argv = req["argv"]
    if argv[0] in ("python", "python3"):
        argv = [sys.executable] + argv[1:]
    env = {"PATH": os.environ.get("PATH", "` + defaultPATH + `")}
    env.update(req["env"])
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            if stdio:
                os.dup2(in_r, 0)
            for fd in (out_r, out_w, err_r, err_w, in_r, in_w):
                if fd > 2:
                    os.close(fd)
            os.chdir(req["cwd"])
            if req.get("warm"):
                warm_run(req["warm"], env)  # sandbox.WarmRunSource, in warm stubs
            for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
                signal.signal(s, signal.SIG_DFL)
            os.execvpe(argv[0], argv, env)
        except BaseException as e:
            os.write(2, ("sandbox: cannot run %s: %s\n" % (argv[0], e)).encode())
        os._exit(127)
    os.close(out_w)
    os.close(err_w)
    caps = {out_r: Stream(1) if stdio else Cap(1, req["limit"]), err_r: Cap(2, req["limit"])}
    stdin_open = stdio
    if stdio:
        os.close(in_r)
        os.set_blocking(in_w, False)
    def expire(signum, frame):
        killall()
        for cap in caps.values():
            cap.flush()
        finish(req, 124)
        os._exit(124)
    signal.signal(signal.SIGALRM, expire)
    signal.signal(signal.SIGUSR1, expire)
    signal.setitimer(signal.ITIMER_REAL, req["timeout"])
    status = None
    open_fds = [out_r, err_r]
    while open_fds:
        rfds = open_fds + ([0] if stdin_open and len(pending) < 1048576 else [])
        wfds = [in_w] if in_w >= 0 and pending else []
        ready, writable, _ = select.select(rfds, wfds, [], 0.1)
        for fd in ready:
            data = os.read(fd, 65536)
            if fd == 0:
                pending += data
                stdin_open = bool(data)
            elif data:
                caps[fd].write(data)
            else:
                open_fds.remove(fd)
        if writable:
            try:
                del pending[:os.write(in_w, pending)]
            except BlockingIOError:
                pass
            except OSError:
                pending.clear()
                stdin_open = False
        if in_w >= 0 and not stdin_open and not pending:
            os.close(in_w)
            in_w = -1
        while status is None:
            try:
                wpid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if wpid == 0:
                break
            if wpid == pid:
                status = st
                killall()  # what it left behind may hold the pipes open
    if status is None:
        _, status = os.waitpid(pid, 0)
    killall()
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    for cap in caps.values():
        cap.flush()
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    signal.setitimer(signal.ITIMER_REAL, 0)  # the run is over: no expire from here on
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    finish(req, code)
    # Stay up until the worker removes the container (a backstop: it
    # does at once).
    time.sleep(req["linger"])
    return code
sys.exit(main())
`

// warmStubPrelude makes a stub warm: it imports pytest and its default
// plugins (when the image has it) before it waits for its request
// (warm_preload, in sandbox.WarmRunSource).
const warmStubPrelude = `
warm_preload()
`

// stubCmd is a sandbox container's command: the stub, waiting for at most
// lease. A warm stub (Config.WarmRunner) runs with site-packages and the
// interpreter variables of sandbox.WarmZygoteEnv (the container's Env),
// which it cannot change per run; a cold one isolated (-I -S), as the
// command it executes sets its own.
func (b *Backend) stubCmd(lease time.Duration) []string {
	secs := strconv.Itoa(int(math.Ceil(lease.Seconds())))
	if b.cfg.WarmRunner {
		// Compiled as <warm-runner>, so warm_run can leave its frames out of
		// tracebacks (the run's own -c code is <string>).
		return []string{"python3", "-c", "import sys; exec(compile(sys.argv.pop(2), '<warm-runner>', 'exec'))",
			secs, sandbox.WarmRunSource + warmStubPrelude + stubScript}
	}
	return []string{"python3", "-I", "-S", "-c", stubScript, secs}
}

// stubEnv is a sandbox container's environment besides the image's.
func (b *Backend) stubEnv() []string {
	env := []string{} // the image's PATH; the stub gives the run its own environment
	if b.cfg.WarmRunner {
		for k, v := range sandbox.WarmZygoteEnv() {
			env = append(env, k+"="+v)
		}
		sort.Strings(env)
	}
	return env
}

// stubLinger is how long a stub waits after the run for the worker to copy
// the results out and remove the container (a backstop: the worker removes
// it at once).
const stubLinger = 2 * time.Minute

// stubGrace is how long after a run's timeout the stub kills the run on
// its own, when the worker did not.
const stubGrace = 5 * time.Second

// request is what the stub reads.
type request struct {
	Argv    []string          `json:"argv"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	Timeout float64           `json:"timeout"` // seconds
	Limit   int               `json:"limit"`   // bytes of head and of tail kept per stream
	Nonce   string            `json:"nonce"`   // marks the trailer with the exit code
	Linger  float64           `json:"linger"`  // seconds the stub stays up after the trailers
	// Warm is the argv to run in the stub's own forked interpreter, which
	// imported pytest while the container waited in the pool
	// (sandbox.WarmArgs; Config.WarmRunner), instead of executing Argv.
	Warm []string `json:"warm,omitempty"`
	// Stdio (RunSpec.Stdio): the stub passes what follows the request
	// on its stdin to the command's, and the command's stdout on whole,
	// as it comes.
	Stdio bool `json:"stdio,omitempty"`
	// Files are the run's workspace files (RunSpec.Files, by cleaned
	// slash-separated name), which the stub writes into /workspace before
	// it starts the command: no archive API call.
	Files map[string][]byte `json:"files,omitempty"`
	// Results asks the stub to send back, after its stdout trailer, what
	// the run left (results.go).
	Results *resultsSpec `json:"results,omitempty"`
}

// box is one started sandbox container waiting for its request.
type box struct {
	id      string
	image   string
	memory  int64
	cpus    float64
	expiry  time.Time // lease
	created time.Time
	// Opened by connect: the attach connection and the engine's wait
	// for the exit (a pooled box has them while it waits).
	att       *types.HijackedResponse
	watch     *exitWatch
	stopWatch context.CancelFunc
}

// Run runs spec.Argv in a fresh container of the image spec.Env.
//
// The container has no network, a read-only root, no capabilities, no new
// privileges, uid 10001, a pids limit, memory (no swap) and CPU limits,
// rlimits, a size-capped tmpfs /tmp, and no environment but PATH, HOME,
// LANG, thread-count caps and spec.EnvVars. spec.Files travel in the
// stub's request into /workspace, the results (spec.Collect, /var/outputs)
// back in its trailer (results.go), and spec.Inputs (root-owned,
// read-only) through the engine's archive API into /var/inputs: no host
// path is mounted. A run with the default Memory and CPUs takes a started
// container, already attached to, from the warm pool when there is one. A
// non-zero exit is a result; an error means the sandbox could not run, or
// ctx ended (the container is killed first).
func (b *Backend) Run(ctx context.Context, spec sandbox.RunSpec) (sandbox.RunResult, error) {
	if b.isClosed() {
		return sandbox.RunResult{}, sandbox.ErrClosed
	}
	if err := spec.Validate(); err != nil {
		return sandbox.RunResult{}, err
	}
	image, jobName, ok := parseEnv(spec.Env) // a named job's tag runs as the image it names
	if !ok {
		return sandbox.RunResult{}, fmt.Errorf("%w: %q is not a docker backend image", sandbox.ErrEnvNotFound, spec.Env)
	}
	named := spec.Env
	spec.Env = image
	timeout := cmp.Or(spec.Timeout, sandbox.DefaultRunTimeout)
	memory := cmp.Or(spec.Memory, sandbox.DefaultMemory)
	cpus := cmp.Or(spec.CPUs, sandbox.DefaultCPUs)
	var inputs []byte
	if len(spec.Inputs) > 0 {
		var err error
		if inputs, err = inputsTar(spec.Inputs); err != nil {
			return sandbox.RunResult{}, err
		}
	}

	start := time.Now()
	bx := b.pool.take(spec.Env, memory, cpus, b.cfg.Now().Add(timeout+stubGrace))
	pooled := bx != nil
	if bx == nil {
		lease := timeout + stubGrace + b.cfg.LeaseMargin
		var err error
		bx, err = b.startBox(ctx, spec.Env, memory, cpus, lease, "run", cmp.Or(spec.JobID, noJob), jobName)
		if err != nil {
			if cerrdefs.IsNotFound(err) {
				b.known.Delete(spec.Env)
				b.known.Delete(named)
				return sandbox.RunResult{}, fmt.Errorf("%w: image %s (build it again): %v", sandbox.ErrEnvNotFound, spec.Env, err)
			}
			return sandbox.RunResult{}, err
		}
	}
	defer b.discard(bx)
	defer b.pool.wake() // replace what this run used, once it is over

	env := sandbox.ThreadEnv(cpus)
	env["HOME"], env["LANG"] = "/tmp", "C.UTF-8"
	for k, v := range spec.EnvVars {
		env[k] = v
	}
	req := request{Argv: spec.Argv, Env: env, Cwd: sandbox.WorkspaceDir,
		Timeout: (timeout + stubGrace).Seconds(), Stdio: spec.Stdio != nil,
		Files: workspaceFiles(spec.Files), Results: newResultsSpec(spec)}
	if args, whyCold := sandbox.WarmArgs(spec); b.cfg.WarmRunner && whyCold == "" {
		req.Warm = args
	}
	res, err := b.execute(ctx, bx, req, timeout, cmp.Or(spec.OutputLimit, sandbox.DefaultOutputLimit), inputs, spec.Stdio)
	res.Duration = time.Since(start)
	b.log.Debug("sandbox run", "job_id", spec.JobID, "container", shortID(bx.id), "env", spec.Env, "argv0", spec.Argv[0], "exit_code", res.ExitCode,
		"timed_out", res.TimedOut, "pooled", pooled, "duration", res.Duration, "err", err)
	return res, err
}

// workspaceFiles are a run's files by cleaned, slash-separated name (nil
// when there are none).
func workspaceFiles(files map[string][]byte) map[string][]byte {
	if len(files) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(files))
	for name, data := range files {
		out[filepath.ToSlash(filepath.Clean(name))] = data
	}
	return out
}

// Everything a run can write is a size-capped tmpfs: /tmp (Config.TmpSize)
// and /workspace and /var/outputs (Config.DiskQuota each), so nothing a run
// writes reaches the engine's disk. The stub writes the files and reads
// the results itself (results.go). On Docker Engine they are anonymous
// volumes of the local driver, of type tmpfs, which the engine mounts
// itself (its archive API, which this backend once used for them, does
// not see into a --tmpfs mount); Podman's compat API ignores those
// options, and would put the volume on its disk, so there they are
// --tmpfs mounts.

// tmpfsMounts are the container's --tmpfs mounts.
func (b *Backend) tmpfsMounts() map[string]string {
	m := map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", b.cfg.TmpSize)}
	if b.podman {
		for _, dir := range []string{sandbox.WorkspaceDir, sandbox.OutputsDir} {
			m[dir] = fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", b.cfg.DiskQuota)
		}
	}
	return m
}

// quotaVolumes are /workspace and /var/outputs on Docker Engine; removing
// the container removes them.
func (b *Backend) quotaVolumes() []mount.Mount {
	if b.podman {
		return nil
	}
	opts := map[string]string{"type": "tmpfs", "device": "tmpfs", "o": fmt.Sprintf("size=%d,mode=1777,nosuid,nodev", b.cfg.DiskQuota)}
	var ms []mount.Mount
	for _, dir := range []string{sandbox.WorkspaceDir, sandbox.OutputsDir} {
		ms = append(ms, mount.Mount{Type: mount.TypeVolume, Target: dir,
			VolumeOptions: &mount.VolumeOptions{DriverConfig: &mount.Driver{Name: "local", Options: opts}}})
	}
	return ms
}

// startBox creates and starts a sandbox container of image whose stub
// waits for a request for at most lease.
func (b *Backend) startBox(ctx context.Context, image string, memory int64, cpus float64, lease time.Duration, role, job, jobName string) (*box, error) {
	now := b.cfg.Now()
	bx := &box{image: image, memory: memory, cpus: cpus, created: now, expiry: now.Add(lease)}
	cfg := &container.Config{
		Image:        image,
		User:         sandboxUser,
		Hostname:     "sandbox",
		Env:          b.stubEnv(),
		Cmd:          b.stubCmd(lease),
		Entrypoint:   []string{},
		WorkingDir:   "/",
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		Volumes:      map[string]struct{}{sandbox.InputsDir: {}}, // written by the worker only
		Labels:       containerLabels(b.cfg.Worker, b.instance, job, jobName, role, b.domain, bx.expiry),
		StopTimeout:  new(int),
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    b.securityOpts,
		Tmpfs:          b.tmpfsMounts(),
		Mounts:         b.quotaVolumes(),
		ShmSize:        min(int64(DefaultShmSize), b.cfg.TmpSize),
		LogConfig:      container.LogConfig{Type: "none"},
		Runtime:        b.cfg.Runtime,
		AutoRemove:     false,
		Resources: container.Resources{
			Memory:     memory,
			MemorySwap: memory, // no swap
			NanoCPUs:   int64(cpus * 1e9),
			PidsLimit:  &b.cfg.PidsLimit,
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: b.cfg.NoFile, Hard: b.cfg.NoFile},
				{Name: "nproc", Soft: b.cfg.NProc, Hard: b.cfg.NProc},
				{Name: "fsize", Soft: b.cfg.MaxFileSize, Hard: b.cfg.MaxFileSize},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	// Not cancelled with ctx: a create the engine completed after we gave
	// up would leave a container we do not know the ID of (the reaper would
	// get it, but only when its lease is over).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	created, err := b.cli.ContainerCreate(ctx, cfg, host, &network.NetworkingConfig{}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("docker: create sandbox container of %s: %w", image, err)
	}
	bx.id = created.ID
	if err := b.cli.ContainerStart(ctx, bx.id, container.StartOptions{}); err != nil {
		b.discard(bx)
		return nil, fmt.Errorf("docker: start sandbox container of %s: %w", image, err)
	}
	return bx, nil
}

// execute sends the request to a started box, copies the files in first,
// and collects the output until the command exits, the timeout (then the
// container is killed) or ctx's end.
func (b *Backend) execute(ctx context.Context, bx *box, req request, timeout time.Duration, outputLimit int,
	inputs []byte, stdio sandbox.StdioFunc) (sandbox.RunResult, error) {
	res := sandbox.RunResult{ExitCode: -1}
	t0 := time.Now()
	// A pooled box is connected already; the trailer usually comes before
	// the wait's answer: the engine notices an exit late.
	if err := b.connect(ctx, bx); err != nil {
		return res, err
	}
	defer bx.release()
	att, w := *bx.att, *bx.watch
	tAttach := time.Since(t0)
	if err := b.copyIn(ctx, bx.id, sandbox.InputsDir, inputs); err != nil {
		return res, err
	}
	tCopy := time.Since(t0)

	req.Limit, req.Nonce, req.Linger = outputLimit, newNonce(), stubLinger.Seconds()
	if err := sendRequest(att, req); err != nil {
		return res, err
	}
	tSent := time.Since(t0)

	stdout, stderr := trim.NewBuffer(outputLimit), trim.NewBuffer(outputLimit)
	bridge := newStdioStream(stdio)
	trail := newTrailers(req.Nonce, bridge.stdout(stdout), stderr, maxResultsHead, req.Results.maxData())
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = stdcopy.StdCopy(trail.out, trail.err, att.Reader)
		trail.flush()
		bridge.endOutput()
	}()
	run := bridge.start(ctx, att)
	end := b.awaitEnd(ctx, bx.id, trail, w, timeout, run.Failed())
	awaitOutput(att, trail, copied)
	if end.status < 0 && trail.seen() {
		end.status = int64(trail.code())
	}
	if err := bridge.finish(run); err != nil {
		return res, err
	}
	b.log.Debug("sandbox execute", "connect", tAttach, "copy_inputs", tCopy, "sent", tSent, "done", time.Since(t0))
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.Truncated() || stderr.Truncated()
	res.ExitCode = int(end.status)
	res.TimedOut = end.timedOut
	if err := end.runError(ctx, trail); err != nil {
		return res, err
	}
	if end.status == filesFailed && trail.seen() && bytes.Contains(res.Stderr, []byte(filesFailedMark)) {
		return res, fmt.Errorf("docker: copy files into %s: %s", sandbox.WorkspaceDir, bytes.TrimSpace(res.Stderr))
	}
	return res, takeResults(&res, req.Results, trail)
}

// The stub's exit status and words when it could not write the run's
// files (over the disk quota): the run did not start.
const (
	filesFailed     = 126
	filesFailedMark = "sandbox: cannot write the run's files: "
)

// takeResults fills res from the results frame of a run that asked for
// results. A run whose stub did not get to its trailer (the container
// died) has none: that is a result, not an error.
func takeResults(res *sandbox.RunResult, r *resultsSpec, trail *trailers) error {
	if r == nil || !trail.seen() {
		return nil
	}
	frame, headLen, err := trail.results()
	if err != nil {
		return err
	}
	if frame == nil {
		return nil
	}
	return applyResults(res, r, frame, headLen)
}

// sendRequest writes the stub's request line and closes stdin (unless the
// run has a stdio bridge).
func sendRequest(att types.HijackedResponse, req request) error {
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := att.Conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("docker: send the command to the sandbox: %w", err)
	}
	if !req.Stdio { // with stdio, the bridge writes on and closes it
		_ = att.CloseWrite()
	}
	return nil
}

// exitWatch is the engine's report of a container's exit (ContainerWait).
type exitWatch struct {
	exits <-chan container.WaitResponse
	errs  <-chan error
}

// runEnd is how a run ended.
type runEnd struct {
	status    int64 // exit status; -1: not known
	waitErr   error // the engine's wait failed
	timedOut  bool
	cancelled bool // ctx ended first
	aborted   bool // the stdio bridge failed first
}

// awaitEnd waits for the run's end: both trailers, the container's exit,
// the timeout or ctx's end. A run that does not end by itself is stopped.
func (b *Backend) awaitEnd(ctx context.Context, id string, trail *trailers, w exitWatch, timeout time.Duration, abort <-chan struct{}) runEnd {
	end := runEnd{status: -1}
	// A timer, not the injected clock: this bounds a real process.
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-trail.done:
		end.status = int64(trail.code())
	case r := <-w.exits:
		end.status = r.StatusCode
	case end.waitErr = <-w.errs:
	case <-timer.C:
		end.timedOut = true
	case <-ctx.Done():
		end.cancelled = true
	case <-abort:
		end.aborted = true // the stdio bridge failed: its error is the run's
	}
	if end.timedOut {
		// The stub kills the run and flushes the tail of the output it
		// kept; SIGKILL follows if it has not exited within a moment.
		b.signal(id, "USR1")
		select {
		case r := <-w.exits:
			end.status = r.StatusCode
		case end.waitErr = <-w.errs:
		case <-time.After(3 * time.Second):
		}
	}
	b.stopUnended(id, w, &end)
	return end
}

// stopUnended kills the container when the wait failed, or when a run
// that timed out or was cancelled has not exited, and waits for its exit.
func (b *Backend) stopUnended(id string, w exitWatch, end *runEnd) {
	if end.waitErr != nil {
		b.signal(id, "KILL") // the wait failed: make sure it ends
		return
	}
	if end.status >= 0 || (!end.timedOut && !end.cancelled && !end.aborted) {
		return
	}
	b.signal(id, "KILL")
	select {
	case r := <-w.exits:
		end.status = r.StatusCode
	case err := <-w.errs:
		end.waitErr = err
	case <-time.After(30 * time.Second):
		end.waitErr = errors.New("the container did not stop 30s after it was killed")
	}
}

// awaitOutput waits for the output copy to end. With the trailers in, the
// output is complete; otherwise the stream ends when the container has
// stopped, and a stuck one is cut.
func awaitOutput(att types.HijackedResponse, trail *trailers, copied <-chan struct{}) {
	select {
	case <-trail.done:
		att.Close()
	case <-copied:
	case <-time.After(5 * time.Second):
		att.Close()
	}
	<-copied
}

// runError is the error of a run that ended so: none for the command's
// own failures and its timeout.
func (end runEnd) runError(ctx context.Context, trail *trailers) error {
	switch {
	case end.cancelled:
		return fmt.Errorf("sandbox: run cancelled: %w", context.Cause(ctx))
	case end.waitErr != nil && !end.timedOut:
		return fmt.Errorf("docker: wait for sandbox: %w", end.waitErr)
	case end.status == 125 && !end.timedOut && !trail.seen():
		return errors.New("docker: the sandbox stub did not receive its command")
	}
	return nil
}

// signal sends sig to a container's init; SIGKILL stops it now, and takes
// everything in it along.
func (b *Backend) signal(id, sig string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.cli.ContainerKill(ctx, id, sig); err != nil && !cerrdefs.IsNotFound(err) && !isNotRunning(err) {
		b.log.Warn("signal sandbox container", "container", shortID(id), "signal", sig, "err", err)
	}
}

func isNotRunning(err error) bool {
	return cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "not running") ||
		strings.Contains(err.Error(), "is not running")
}

// removeLater removes a container (and its volumes) in the background, so
// a run returns without waiting for it. Close waits for removals.
func (b *Backend) removeLater(id string) {
	b.removing.Add(1)
	b.goBackground(func() {
		defer b.removing.Add(-1)
		b.remove(id)
	})
}

func (b *Backend) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A container that is just stopping (its stub exited after the
	// trailers) can refuse removal for a moment ("state improper"): retry.
	var err error
	for attempt := range 10 {
		err = b.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
			continue
		}
		break
	}
	b.log.Warn("remove sandbox container", "container", shortID(id), "err", err)
}

// runCommand runs argv in a fresh sandbox of image with the defaults (the
// start-up probe).
func (b *Backend) runCommand(ctx context.Context, image string, argv []string) (sandbox.RunResult, error) {
	timeout := remaining(ctx, DefaultProbeTimeout)
	bx, err := b.startBox(ctx, image, sandbox.DefaultMemory, 1, timeout+stubGrace+b.cfg.LeaseMargin, "probe", "probe", "")
	if err != nil {
		// Only a refusal that is about the runtime is one: a full disk, a
		// cancelled start or limits above the host's keep their own error
		// (and probe's hints for them).
		if b.cfg.Runtime != "" && !cerrdefs.IsNotFound(err) && ctx.Err() == nil &&
			strings.Contains(strings.ToLower(err.Error()), "runtime") {
			return sandbox.RunResult{}, &RuntimeError{Runtime: b.cfg.Runtime, Host: b.cli.DaemonHost(), Err: err}
		}
		return sandbox.RunResult{}, err
	}
	defer func() {
		bx.release()
		b.remove(bx.id)
	}()
	if b.cfg.Runtime != "" {
		// Podman's Docker-compatible API accepts HostConfig.Runtime and
		// ignores it: refuse to run without the isolation asked for.
		info, err := b.cli.ContainerInspect(ctx, bx.id)
		if err != nil {
			return sandbox.RunResult{}, fmt.Errorf("docker: inspect probe container: %w", err)
		}
		if info.HostConfig == nil || info.HostConfig.Runtime != b.cfg.Runtime {
			got := ""
			if info.HostConfig != nil {
				got = info.HostConfig.Runtime
			}
			return sandbox.RunResult{}, &RuntimeError{Runtime: b.cfg.Runtime, Host: b.cli.DaemonHost(), Ignored: true, Got: got}
		}
	}
	return b.execute(ctx, bx, request{Argv: argv, Env: map[string]string{"HOME": "/tmp", "LANG": "C.UTF-8"},
		Cwd: "/", Timeout: (timeout + stubGrace).Seconds()}, timeout, 64<<10, nil, nil)
}

// RuntimeError is New's error when the engine refuses or ignores
// Config.Runtime: no sandbox runs without the isolation asked for.
type RuntimeError struct {
	Runtime string // Config.Runtime
	Host    string // the engine
	Ignored bool   // the engine accepted the container but runs it with Got
	Got     string // the runtime the engine reports (Ignored)
	Err     error  // the engine's refusal (not Ignored)
}

func (e *RuntimeError) Error() string {
	if e.Ignored {
		return fmt.Sprintf("docker: OCI runtime %q ignored by the engine at %s (it runs the container with runtime %q); "+
			"with Podman, set the runtime in containers.conf instead of Config.Runtime", e.Runtime, e.Host, e.Got)
	}
	return fmt.Sprintf("docker: OCI runtime %q refused by the engine at %s (is it installed and registered "+
		"with the engine?): %v", e.Runtime, e.Host, e.Err)
}

func (e *RuntimeError) Unwrap() error { return e.Err }
