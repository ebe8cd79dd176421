package bwrap

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/trim"
)

// The warm runner: one zygote per environment (zygote.py), a Python
// process in a bubblewrap sandbox made by the same builder as a cold
// run's (args.go: its namespaces, read-only root, seccomp filter), which
// has imported pytest once and forks a child per run. The child enters
// the run's isolation before it reads anything of the run: the run's
// cgroup (the worker moves it in, as it moves a cold run's bubblewrap),
// new mount, pid, network, IPC and UTS namespaces, fresh tmpfs at /tmp,
// /dev/shm, /workspace and /var/outputs, the run's rlimits (runLimits)
// and uid, no capabilities and no_new_privs. The worker keeps the
// wall-clock timeout by killing the cgroup. Anything wrong with the zygote
// before the run's code started (dead, wedged, a child that crashed or
// broke the protocol) makes the run a cold one, logged and counted
// (Config.OnWarmFallback).

//go:embed zygote.py
var zygoteSource string

// Why a warm run fell back to a cold one (sandbox.WarmFallback*).
const (
	WarmFallbackStart    = sandbox.WarmFallbackStart
	WarmFallbackDead     = sandbox.WarmFallbackDead
	WarmFallbackWedged   = sandbox.WarmFallbackWedged
	WarmFallbackCrashed  = sandbox.WarmFallbackCrashed
	WarmFallbackProtocol = sandbox.WarmFallbackProtocol
)

const (
	warmAnswerTimeout = 30 * time.Second // a child is isolated and answers within this (a loaded host is slow)
	warmStartTimeout  = 60 * time.Second // the zygote imports pytest within this
	warmMaxMessage    = 1 << 20          // a child's message to the worker
	warmRetryAfter    = 30 * time.Second // a zygote that failed to start is not tried again sooner
	// warmMaxZygotes bounds the zygotes (one per environment, each an
	// interpreter with pytest imported); past it the least recently used
	// idle one is stopped.
	warmMaxZygotes = 4
)

// warmPool holds the zygotes, one per environment directory.
type warmPool struct {
	mu       sync.Mutex
	zygotes  map[string]*zygoteSlot
	closed   bool
	cleanups sync.WaitGroup // runs' cgroups being removed
}

// zygote is one running zygote.
type zygote struct {
	ctl  *os.File // the worker's end of the control socket (SOCK_SEQPACKET)
	proc zygoteProc
	// inflight counts its runs: killing it kills theirs (they are in its
	// sandbox's pid namespace), so only an idle one is evicted.
	inflight atomic.Int32
	lastUsed time.Time // under warmPool.mu
	dir      string
	spares   spares        // warmspare.go
	dead     chan struct{} // closed once the zygote's bwrap has exited
	output   *trim.Buffer
}

// warmFallback is a warm run that did not happen: why, for the log and
// the metric. A final one is not run cold: it is the run's error (an
// infrastructure error, not the program's result).
type warmFallback struct {
	reason string
	err    error
	final  bool
}

func (f *warmFallback) Error() string { return "warm runner " + f.reason + ": " + f.err.Error() }

// warmAvailable says why this backend cannot have a warm runner, or "".
func (b *Backend) warmAvailable() string {
	switch {
	case !b.cfg.WarmRunner:
		return "off"
	case !b.root:
		return "the worker is not root: a zygote needs real capabilities to isolate its children"
	case b.cg == nil:
		return "no usable cgroup: a warm run is bounded and killed through its cgroup"
	}
	return ""
}

// runWarm runs spec in a child of the environment's zygote. A
// *warmFallback error means the run has no result (it did not start, or
// its zygote died under it) and nothing of it is left: run it cold.
func (b *Backend) runWarm(ctx context.Context, spec sandbox.RunSpec, envDir string, args []string) (sandbox.RunResult, error) {
	z, err := b.zygoteFor(envDir)
	var fb *warmFallback
	switch {
	case errors.As(err, &fb):
		return sandbox.RunResult{}, err
	case err != nil:
		return sandbox.RunResult{}, &warmFallback{reason: WarmFallbackStart, err: err}
	}
	defer z.inflight.Add(-1)
	uid := b.takeUID()
	memory := cmp.Or(spec.Memory, sandbox.DefaultMemory)
	cpus := cmp.Or(spec.CPUs, sandbox.DefaultCPUs)
	spare := z.takeSpare(spec, memory, cpus) // warmspare.go
	defer b.makeSpare(z)                     // for the next run
	var cg *runCgroup
	if spare != nil {
		cg = spare.cg
	} else if cg, err = b.cg.create(*b.runCgroupLimits(memory, cpus)); err != nil {
		b.releaseUID(uid)
		return sandbox.RunResult{}, err
	}
	// The cgroup is killed before the run returns (finishWarm); its
	// removal, which waits for the kernel to finish the kill, and the
	// uid's release happen after, off the run's time.
	b.warm.cleanups.Add(1)
	defer func() {
		go func() {
			defer b.warm.cleanups.Done()
			cg.kill()
			b.destroyCgroup(cg)
			b.releaseUID(uid)
		}()
	}()
	var w *warmRun
	if spare != nil {
		w = spare.w
	} else if w, err = b.sendRun(z, spec, cg); err != nil {
		return sandbox.RunResult{}, err
	}
	defer w.close()
	timeout := cmp.Or(spec.Timeout, sandbox.DefaultRunTimeout)
	if err := w.begin(z, b.warmRequest(spec, args, uid, memory, timeout, cpus)); err != nil {
		return sandbox.RunResult{}, err
	}
	return b.finishWarm(ctx, spec, w, cg, timeout)
}

// warmRequest is what the child is told of its run (zygote.py reads it).
func (b *Backend) warmRequest(spec sandbox.RunSpec, args []string, uid uint32, memory int64, timeout time.Duration, cpus float64) map[string]any {
	env := sandbox.ThreadEnv(cpus)
	for k, v := range spec.EnvVars {
		env[k] = v
	}
	envMap := map[string]string{}
	for _, kv := range sandboxEnv(env) {
		k, v, _ := bytes.Cut([]byte(kv), []byte("="))
		envMap[string(k)] = string(v)
	}
	files := make(map[string]string, len(spec.Files))
	for name, data := range spec.Files {
		// Clean, as the cold run writes it: the zygote makes each parent
		// directory of the name as it stands, and "a/./b" would make "a/."
		// after "a".
		files[filepath.Clean(name)] = hex.EncodeToString(data)
	}
	etc := etcFiles(uid)
	l := b.runLimits(memory, timeout, cpus)
	return map[string]any{
		"argv": args, "env": envMap, "files": files, "uid": uid,
		"etc":      map[string]string{"passwd": etc["passwd"], "group": etc["group"]},
		"tmp_size": b.cfg.TmpSize, "disk_quota": b.cfg.DiskQuota,
		"rlimits": map[string]int64{"as": l.as, "nproc": l.nproc, "fsize": l.fsize, "nofile": l.nofile, "core": 0},
		"cpu":     l.cpu,
	}
}

// warmRun is the worker's side of one warm run.
type warmRun struct {
	conn           *net.UnixConn
	stdout, stderr *trim.Buffer
	copied         sync.WaitGroup
	outR, errR     *os.File
	inW            *os.File // RunSpec.Stdio: the child's stdin
	roots          []int    // the child's /workspace and /var/outputs
}

func (w *warmRun) close() {
	w.conn.Close()
	closeFiles(w.outR, w.errR, w.inW)
	for _, fd := range w.roots {
		unix.Close(fd)
	}
}

// sendRun makes the run's socket and output pipes and hands them to the
// zygote, which forks the run's child.
func (b *Backend) sendRun(z *zygote, spec sandbox.RunSpec, cg *runCgroup) (*warmRun, error) {
	procs, err := cg.procsFiles()
	if err != nil {
		return nil, err
	}
	defer closeFiles(procs...)
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "warm-run")
	defer theirs.Close()
	mine := os.NewFile(uintptr(pair[0]), "warm-run")
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: run socket: %w", err)
	}
	limit := cmp.Or(spec.OutputLimit, sandbox.DefaultOutputLimit)
	w := &warmRun{conn: fc.(*net.UnixConn), stdout: trim.NewBuffer(limit), stderr: trim.NewBuffer(limit)}
	var inR, outW, errW *os.File
	if w.outR, outW, err = os.Pipe(); err == nil {
		w.errR, errW, err = os.Pipe()
	}
	if err == nil && spec.Stdio != nil {
		inR, w.inW, err = os.Pipe()
	} else if err == nil {
		inR, err = os.Open(os.DevNull)
	}
	if err != nil {
		w.close()
		closeFiles(inR, outW, errW)
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	defer closeFiles(inR, outW, errW)
	fds := []int{int(theirs.Fd()), int(inR.Fd()), int(outW.Fd()), int(errW.Fd())}
	for _, f := range procs {
		fds = append(fds, int(f.Fd()))
	}
	rights := unix.UnixRights(fds...)
	if err := unix.Sendmsg(int(z.ctl.Fd()), []byte("X"), rights, nil, 0); err != nil {
		w.close()
		z.kill()
		return nil, &warmFallback{reason: WarmFallbackDead, err: err}
	}
	copies := []struct {
		dst io.Writer
		src *os.File
	}{{w.stderr, w.errR}}
	if spec.Stdio == nil { // else the bridge reads stdout (finishWarm)
		copies = append(copies, copies[0])
		copies[1].dst, copies[1].src = w.stdout, w.outR
	}
	for _, p := range copies {
		w.copied.Add(1)
		go func() {
			defer w.copied.Done()
			_, _ = io.Copy(p.dst, p.src)
		}()
	}
	return w, nil
}

func closeFiles(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// begin sends the child its request and waits until it is isolated and
// the run's code about to start.
func (w *warmRun) begin(z *zygote, req map[string]any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	// The child reads it all before it answers: no deadline but the answer's.
	_ = w.conn.SetWriteDeadline(time.Now().Add(warmAnswerTimeout))
	if _, err := w.conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		return w.unhealthy(z, err)
	}
	_ = w.conn.SetReadDeadline(time.Now().Add(warmAnswerTimeout))
	var started struct {
		Started bool   `json:"started"`
		Error   string `json:"error"`
	}
	fds, err := w.readMessage(&started)
	w.roots = fds
	switch {
	case err != nil:
		return w.unhealthy(z, err)
	case started.Error != "" || !started.Started || len(fds) != 2:
		return &warmFallback{reason: WarmFallbackProtocol, err: fmt.Errorf("child: %q, %d descriptors", started.Error, len(fds))}
	}
	_ = w.conn.SetReadDeadline(time.Time{})
	return nil
}

// unhealthy is the fallback for a child that did not answer: wedged (the
// zygote is killed, and replaced at the next run) or gone.
func (w *warmRun) unhealthy(z *zygote, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		z.kill()
		return &warmFallback{reason: WarmFallbackWedged, err: err}
	}
	return &warmFallback{reason: WarmFallbackCrashed, err: err}
}

// readMessage reads one length-prefixed JSON message into v, with the
// descriptors sent along with it (received close-on-exec).
func (w *warmRun) readMessage(v any) ([]int, error) {
	// Room for more than the two expected: a buffer too short would
	// drop (close) descriptors silently.
	oob := make([]byte, unix.CmsgSpace(8*4))
	hdr := make([]byte, 4)
	n, oobn, _, _, err := w.conn.ReadMsgUnix(hdr, oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	if _, err := io.ReadFull(w.conn, hdr[n:]); err != nil {
		return fds, err
	}
	size := binary.BigEndian.Uint32(hdr)
	if size > warmMaxMessage {
		return fds, fmt.Errorf("a %d-byte message", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(w.conn, body); err != nil {
		return fds, err
	}
	return fds, json.Unmarshal(body, v)
}

// finishWarm waits for the run's end, its timeout or ctx's end, kills
// what is left of it and collects what it wrote, as a cold run does.
func (b *Backend) finishWarm(ctx context.Context, spec sandbox.RunSpec, w *warmRun, cg *runCgroup, timeout time.Duration) (sandbox.RunResult, error) {
	start := time.Now()
	var stdio *sandbox.StdioRun
	if spec.Stdio != nil {
		stdio = sandbox.StartStdio(ctx, spec.Stdio, w.inW, w.outR)
		w.inW = nil // the bridge closes it
	}
	exitc := make(chan int, 1)
	go func() {
		var end struct {
			Exit *int `json:"exit"`
		}
		_, err := w.readMessage(&end)
		if err != nil || end.Exit == nil {
			exitc <- -1 // the zygote died, or the worker closed the socket
			return
		}
		exitc <- *end.Exit
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	out := sandbox.RunResult{ExitCode: -1}
	var cancelled, ended, zygoteDied bool
	select {
	case code := <-exitc:
		ended = true
		if code < 0 && spec.Stdio == nil {
			// The zygote died under the run: no result, and the run's
			// processes died with its sandbox.
			cg.kill()
			w.waitOutput()
			return out, &warmFallback{reason: WarmFallbackCrashed, err: errors.New("the zygote died during the run")}
		}
		// A run with a stdio bridge is not run again (its conversation
		// had effects), but its end is the infrastructure's, not the
		// program's (below).
		zygoteDied = code < 0
		out.ExitCode = code
	case <-timer.C:
		out.TimedOut = true
	case <-ctx.Done():
		cancelled = true
	case <-stdio.Failed(): // its error is the run's (Finish)
	}
	// pid 1 of the run's namespace (zygote.py's reaper) exits with the
	// run's process, and the kernel then kills the rest; the cgroup
	// catches anything else.
	cg.kill()
	if !ended {
		w.conn.Close() // the reader ends
		<-exitc
	}
	if !ended || out.TimedOut || cancelled {
		// Killed, not ended: the socket closing says nothing of the run's
		// processes, which may still be dying, and still writing what
		// collectWarm reads. (A run that ended has none left: its pid 1
		// is gone, and the kernel reaps a pid namespace before its init
		// is.)
		cg.waitEmpty(5 * time.Second)
	}
	w.waitOutput()
	stdioErr := stdio.Finish()
	if zygoteDied {
		return sandbox.RunResult{ExitCode: -1, Duration: time.Since(start), Stderr: w.stderr.Bytes()},
			&warmFallback{reason: WarmFallbackCrashed, err: errors.New("the zygote died during a run with a stdio bridge"), final: true}
	}
	if stdioErr != nil {
		return sandbox.RunResult{ExitCode: -1, Duration: time.Since(start), Stderr: w.stderr.Bytes()}, stdioErr
	}
	out.Duration = time.Since(start)
	out.Stdout, out.Stderr = w.stdout.Bytes(), w.stderr.Bytes()
	out.Truncated = w.stdout.Truncated() || w.stderr.Truncated()
	b.log.Debug("sandbox run", "env", spec.Env, "argv0", spec.Argv[0], "warm", true, "exit_code", out.ExitCode,
		"timed_out", out.TimedOut, "duration", out.Duration)
	if cancelled {
		return out, fmt.Errorf("sandbox: run cancelled: %w", context.Cause(ctx))
	}
	return b.collectWarm(spec, w, out)
}

// waitOutput waits for the output pipes to close: everything that held
// them is dead (the cgroup was killed), so this is bounded; the bound is
// a second line.
func (w *warmRun) waitOutput() {
	done := make(chan struct{})
	go func() { w.copied.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		w.outR.Close()
		w.errR.Close()
		<-done
	}
}

// collectWarm reads the run's files through the descriptors of its
// /workspace and /var/outputs, with the cold path's collectors.
func (b *Backend) collectWarm(spec sandbox.RunSpec, w *warmRun, out sandbox.RunResult) (sandbox.RunResult, error) {
	var err error
	ws, outs := "/proc/self/fd/"+strconv.Itoa(w.roots[0]), "/proc/self/fd/"+strconv.Itoa(w.roots[1])
	if out.Files, err = collectFiles(ws, spec.Collect); err != nil {
		return out, err
	}
	if spec.CollectOutputs {
		if out.Outputs, out.OutputDirs, out.OutputsOmitted, err = collectTree(outs, spec.OutputCaps.WithDefaults()); err != nil {
			return out, err
		}
	}
	return out, nil
}

// zygoteSlot is an environment's zygote, or its start in progress.
type zygoteSlot struct {
	ready  chan struct{} // closed when the start has ended
	z      *zygote       // set before ready is closed, unless err is
	err    error
	failed time.Time // when err was set
}

// zygoteFor is the environment's zygote. The first run of an environment
// waits for its start. A run that finds the zygote dead (or its last start
// failed a while ago) starts another in the background and falls back to a
// cold run (counted), rather than wait.
func (b *Backend) zygoteFor(envDir string) (*zygote, error) {
	b.warm.mu.Lock()
	if b.warm.closed {
		b.warm.mu.Unlock()
		return nil, sandbox.ErrClosed
	}
	slot := b.warm.zygotes[envDir]
	if slot != nil {
		select {
		case <-slot.ready:
		default:
			b.warm.mu.Unlock()
			<-slot.ready
			return b.use(slot)
		}
		switch {
		case slot.err == nil && !slot.z.isDead():
			slot.z.inflight.Add(1)
			slot.z.lastUsed = time.Now()
			b.warm.mu.Unlock()
			return slot.z, nil
		case slot.err != nil && time.Since(slot.failed) < warmRetryAfter:
			b.warm.mu.Unlock()
			return nil, &warmFallback{reason: WarmFallbackStart, err: slot.err}
		}
	}
	next := &zygoteSlot{ready: make(chan struct{})}
	b.warm.zygotes[envDir] = next
	if slot != nil && slot.z != nil { // dead: its spare's child died with it, its cgroup is left
		b.warm.cleanups.Add(1)
		go func() {
			defer b.warm.cleanups.Done()
			b.dropSpares(slot.z)
		}()
	}
	b.evictLocked()
	b.warm.mu.Unlock()
	// claim: the caller runs on the zygote. It is counted in flight
	// before ready is closed, so an eviction for another environment
	// cannot stop it before its first run.
	start := func(claim bool) {
		defer close(next.ready)
		z, err := b.startZygote(envDir)
		if err != nil {
			next.err, next.failed = err, time.Now()
			b.log.Warn("warm runner could not start", "env", filepath.Base(envDir), "err", err)
			return
		}
		// No lock: nothing reads z before ready is closed.
		z.lastUsed = time.Now()
		if claim {
			z.inflight.Add(1)
		}
		next.z = z
	}
	if slot == nil {
		start(true)
		return next.z, next.err
	}
	go start(false)
	if slot.err != nil { // its retry is due
		return nil, &warmFallback{reason: WarmFallbackStart, err: slot.err}
	}
	return nil, &warmFallback{reason: WarmFallbackDead, err: fmt.Errorf("it exited: %s", firstLine(string(slot.z.output.Bytes())))}
}

// use takes a run on a slot whose start has ended.
func (b *Backend) use(slot *zygoteSlot) (*zygote, error) {
	if slot.err != nil {
		return nil, slot.err
	}
	b.warm.mu.Lock()
	slot.z.inflight.Add(1)
	slot.z.lastUsed = time.Now()
	b.warm.mu.Unlock()
	return slot.z, nil
}

// evictLocked stops the least recently used idle zygote while there are
// more than warmMaxZygotes (in the background; Close waits for it).
func (b *Backend) evictLocked() {
	for len(b.warm.zygotes) > warmMaxZygotes {
		var lru string
		for env, slot := range b.warm.zygotes {
			select {
			case <-slot.ready:
			default:
				continue
			}
			if slot.z == nil { // a start that failed: nothing to stop
				delete(b.warm.zygotes, env)
				continue
			}
			if slot.z.inflight.Load() > 0 {
				continue
			}
			if lru == "" || slot.z.lastUsed.Before(b.warm.zygotes[lru].z.lastUsed) {
				lru = env
			}
		}
		if lru == "" {
			if len(b.warm.zygotes) > warmMaxZygotes {
				b.log.Warn("more warm runners than the bound: all are busy or starting", "bound", warmMaxZygotes)
			}
			return // over the bound until one is idle
		}
		z := b.warm.zygotes[lru].z
		delete(b.warm.zygotes, lru)
		b.warm.cleanups.Add(1)
		go func() {
			defer b.warm.cleanups.Done()
			b.dropSpares(z)
			z.kill()
			<-z.dead
			z.ctl.Close()
		}()
	}
}

// zygoteProc is a zygote's bubblewrap and its sandbox's init, which kill
// signals until they have exited, and never after: by then the pidfd is
// closed (its number may be another run's pidfd, or another zygote's)
// and bubblewrap's pid may be reaped and reused.
type zygoteProc struct {
	mu     sync.Mutex
	pid    int // bubblewrap's, and its process group's
	pidfd  int // the sandbox's init (-1: none)
	exited bool
}

// kill kills the zygote's sandbox and bubblewrap's process group; a no-op
// once bubblewrap has exited.
func (z *zygote) kill() {
	p := &z.proc
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
}

// waitExit waits for bubblewrap to exit without reaping it (it stays a
// zombie, so its pid and process group cannot be reused meanwhile), then
// marks it exited and closes the pidfd, so that kill touches neither
// again. The caller reaps it after (cmd.Wait).
func (p *zygoteProc) waitExit() {
	var info unix.Siginfo
	for {
		if err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exited = true
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
}

func (z *zygote) isDead() bool {
	select {
	case <-z.dead:
		return true
	default:
		return false
	}
}

// startZygote starts a zygote for envDir and waits until it has imported
// pytest. Its sandbox is a cold run's (args, command), as root with the
// capabilities it isolates its children with (capabilities).
func (b *Backend) startZygote(envDir string) (*zygote, error) {
	dir, err := os.MkdirTemp(b.runsDir, "zygote-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: zygote dir: %w", err)
	}
	z := &zygote{dir: dir, dead: make(chan struct{}), output: trim.NewBuffer(16 << 10)}
	s := &sandboxSpec{
		argv: []string{"python", "-c", "import sys; exec(compile(sys.argv[1], '<warm-runner>', 'exec'))",
			sandbox.WarmRunSource + zygoteSource},
		env: sandbox.WarmZygoteEnv(), envDir: envDir, zygote: true,
		workspace: filepath.Join(dir, "workspace"), outputs: filepath.Join(dir, "outputs"), etcDir: filepath.Join(dir, "etc"),
		timeout: warmStartTimeout, outputLimit: 16 << 10,
	}
	for k, v := range sandbox.ThreadEnv(1) {
		s.env[k] = v
	}
	for _, d := range []string{s.workspace, s.outputs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: zygote dir: %w", err)
		}
	}
	if err := writeEtc(s.etcDir, 0); err != nil {
		return nil, fmt.Errorf("sandbox: zygote dir: %w", err)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: socketpair: %w", err)
	}
	z.ctl = os.NewFile(uintptr(pair[0]), "zygote-ctl")
	theirs := os.NewFile(uintptr(pair[1]), "zygote-ctl")
	defer theirs.Close()
	if err := b.launchZygote(z, s, theirs); err != nil {
		z.ctl.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return z, nil
}

// launchZygote starts bubblewrap for s with the control socket as one
// more descriptor, as exec starts a cold run's, and waits for "ready".
func (b *Backend) launchZygote(z *zygote, s *sandboxSpec, ctl *os.File) error {
	pipes, err := openBwrapPipes(b.seccomp)
	if err != nil {
		return err
	}
	defer pipes.close()
	cmd := b.bwrapCmd(s, pipes, z.output, z.output)
	cmd.ExtraFiles = append(cmd.ExtraFiles, ctl)
	if err := b.start(cmd, pipes, nil); err != nil {
		return err
	}
	ctl.Close() // the zygote has it; a zygote that dies then closes the socket
	<-pipes.sendArgs(b.args(s))
	pidfd, _ := sandboxInit(pipes.infoR)
	z.proc = zygoteProc{pid: cmd.Process.Pid, pidfd: pidfd}
	go func() {
		z.proc.waitExit()
		_ = cmd.Wait()
		os.RemoveAll(z.dir)
		close(z.dead)
	}()
	ready := make(chan error, 1)
	go func() {
		var buf [1]byte
		_, err := z.ctl.Read(buf[:])
		ready <- err
	}()
	readDone := false
	select {
	case err = <-ready:
		readDone = true
	case <-time.After(warmStartTimeout):
		err = errors.New("not ready in time")
	}
	if err != nil {
		z.kill()
		<-z.dead
		if !readDone { // a zygote that died before it was ready had answered already: waiting again hung for ever
			<-ready
		}
		return fmt.Errorf("sandbox: warm runner: %w: %s", err, firstLine(string(z.output.Bytes())))
	}
	return nil
}

// closeWarm kills every zygote (waiting for starts in progress) and
// waits for them to be gone.
func (b *Backend) closeWarm() {
	b.warm.mu.Lock()
	b.warm.closed = true
	slots := b.warm.zygotes
	b.warm.zygotes = nil
	b.warm.mu.Unlock()
	for _, slot := range slots {
		<-slot.ready
		if slot.z != nil {
			b.dropSpares(slot.z)
			slot.z.kill()
			<-slot.z.dead
			slot.z.ctl.Close()
		}
	}
	b.warm.cleanups.Wait()
}

// killZygotes kills the zygotes, as a crash would, and waits for them to
// be gone (tests).
func (b *Backend) killZygotes() int {
	b.warm.mu.Lock()
	defer b.warm.mu.Unlock()
	n := 0
	for _, slot := range b.warm.zygotes {
		<-slot.ready
		if slot.z != nil {
			slot.z.kill()
			<-slot.z.dead
			n++
		}
	}
	return n
}
