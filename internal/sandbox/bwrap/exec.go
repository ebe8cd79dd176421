package bwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autocoder/autocoder/internal/sandbox"
	"github.com/autocoder/autocoder/internal/trim"
)

// mount is one bind mount into the sandbox.
type mount struct {
	src, dst string
	rw       bool
}

// limits are the rlimits of the sandboxed command; zero leaves one alone.
type limits struct {
	as, nproc, fsize, nofile, cpu int64
}

// sandboxSpec is one bubblewrap invocation: a run, a build step or the
// startup probe.
type sandboxSpec struct {
	argv        []string
	env         map[string]string // besides PATH, HOME and LANG
	egress      string            // builds: the host path of the egress Session's socket, bound at egress.SocketPath
	envDir      string            // host venv bound at /opt/venv ("" none)
	envRW       bool              // builds write the venv
	workspace   string            // bound read-write at /workspace ("" none)
	outputs     string            // bound read-write at /var/outputs ("" none)
	inputs      []mount           // under /var/inputs, read-only
	tmpDir      string            // disk-backed /tmp for builds ("" = size-capped tmpfs)
	etcDir      string            // passwd, group, hosts, nsswitch.conf
	extraEtc    []string          // more /etc entries (builds)
	extraRO     []string          // more host paths, read-only at the same place
	uid         uint32            // host uid in root mode
	limits      limits
	cgroup      *cgroupLimits // runs: the sandbox's own cgroup (nil: none)
	timeout     time.Duration
	outputLimit int
	stdio       sandbox.StdioFunc // runs: RunSpec.Stdio (nil: none)
	zygote      bool              // a warm runner's zygote: stays root with the capabilities it isolates runs with
}

// execResult is what one bubblewrap invocation produced.
type execResult struct {
	exitCode       int
	timedOut       bool
	stdout, stderr []byte
	truncated      bool
	duration       time.Duration
}

// runLimits are the rlimits of a run.
func (b *Backend) runLimits(memory int64, timeout time.Duration, cpus float64) limits {
	nproc := int64(b.cfg.MaxProcs)
	if !b.root {
		// RLIMIT_NPROC counts every task of the real uid; leave the worker's
		// own processes and threads out of the sandbox's budget.
		nproc += int64(countUserTasks(os.Getuid()))
	}
	// CPU seconds: the wall-clock budget times the cores granted, so a
	// multi-threaded run cannot burn more than its share before the timeout.
	cpu := int64(math.Ceil(timeout.Seconds()*cpus)) + 1
	return limits{as: memory, nproc: nproc, fsize: b.cfg.MaxFileSize, nofile: 4096, cpu: cpu}
}

// runCgroupLimits are the limits of a run's cgroup: memory and CPUs as
// asked, and the processes of MaxProcs plus bubblewrap's own two.
func (b *Backend) runCgroupLimits(memory int64, cpus float64) *cgroupLimits {
	return &cgroupLimits{memory: memory, cpus: cpus, pids: int64(b.cfg.MaxProcs) + 2}
}

// exec runs one sandbox to completion, the timeout, or ctx's end. On the
// timeout or cancellation it kills the whole tree: bubblewrap's process
// group, and the sandbox's pid namespace through its init process (when
// a pid namespace's init dies, the kernel kills everything in it). It
// returns only once every process of the sandbox is gone.
func (b *Backend) exec(ctx context.Context, s *sandboxSpec) (execResult, error) {
	pipes, err := openBwrapPipes(b.seccomp)
	if err != nil {
		return execResult{}, err
	}
	// Last: after the argument writer is done with its end.
	defer pipes.close()
	cg, err := b.createCgroup(s)
	if err != nil {
		return execResult{}, err
	}
	if cg != nil {
		defer b.destroyCgroup(cg)
	}

	stdout, stderr := trim.NewBuffer(s.outputLimit), trim.NewBuffer(s.outputLimit)
	cmd := b.bwrapCmd(s, pipes, stdout, stderr)
	sp, err := attachStdio(cmd, s.stdio)
	if err != nil {
		return execResult{}, err
	}
	defer sp.close()
	options := b.args(s)
	start := time.Now()
	if err := b.start(cmd, pipes, cg); err != nil {
		return execResult{}, err
	}
	stdio := sp.start(ctx, s.stdio)
	// bwrap reads all arguments before it writes the info report, so this
	// write finishes (or fails, if bwrap died) before sandboxInit returns.
	writeDone := pipes.sendArgs(options)
	defer func() { <-writeDone }()
	pidfd, status := sandboxInit(pipes.infoR)
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}

	timedOut, cancelled, waitErr := waitOrKill(ctx, cmd, pidfd, s.timeout, stdio.Failed())
	if !b.reap(pidfd) {
		b.log.Error("sandbox processes outlived their sandbox", "pid", cmd.Process.Pid)
	}
	if err := stdio.Finish(); err != nil {
		return execResult{exitCode: -1, duration: time.Since(start), stderr: stderr.Bytes()}, err
	}
	res := execResult{exitCode: -1, timedOut: timedOut, duration: time.Since(start),
		stdout: stdout.Bytes(), stderr: stderr.Bytes(), truncated: stdout.Truncated() || stderr.Truncated()}
	if cmd.ProcessState != nil {
		res.exitCode = cmd.ProcessState.ExitCode()
	}
	if cancelled {
		return res, fmt.Errorf("sandbox: run cancelled: %w", context.Cause(ctx))
	}
	return res, b.execError(res, waitErr, status)
}

// bwrapPipes are the three pipes to bubblewrap besides its output: it
// reports its sandbox's init and the command's exit on info (fd 3,
// --json-status-fd; status), reads its options
// from args (fd 4, --args) and its seccomp filter from seccomp (fd 5,
// --seccomp). The options go through a pipe, not argv: the sandbox can
// read its init's /proc/1/cmdline, which would show host paths.
type bwrapPipes struct {
	infoR, infoW *os.File
	argsR, argsW *os.File
	seccompR     *os.File
}

// openBwrapPipes opens the pipes, with the seccomp filter already in its
// own (a few hundred bytes: far below a pipe's buffer).
func openBwrapPipes(filter []byte) (*bwrapPipes, error) {
	var ends [6]*os.File
	for i := 0; i < len(ends); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ends[:i])
			return nil, fmt.Errorf("sandbox: pipe: %w", err)
		}
		ends[i], ends[i+1] = r, w
	}
	_, err := ends[5].Write(filter)
	ends[5].Close()
	if err != nil {
		closeAll(ends[:])
		return nil, fmt.Errorf("sandbox: write the seccomp filter: %w", err)
	}
	return &bwrapPipes{infoR: ends[0], infoW: ends[1], argsR: ends[2], argsW: ends[3], seccompR: ends[4]}, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}

// closeChildEnds closes the ends bubblewrap has inherited once it started.
func (pp *bwrapPipes) closeChildEnds() {
	pp.infoW.Close()
	pp.argsR.Close()
	pp.seccompR.Close()
}

// close closes every end (those closed already are left alone).
func (pp *bwrapPipes) close() {
	closeAll([]*os.File{pp.infoR, pp.infoW, pp.argsR, pp.argsW, pp.seccompR})
}

// sendArgs writes the options, NUL-terminated, in the background and
// closes the pipe; the channel is closed when it is done.
func (pp *bwrapPipes) sendArgs(args []string) <-chan struct{} {
	var buf bytes.Buffer
	for _, a := range args {
		buf.WriteString(a)
		buf.WriteByte(0)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = pp.argsW.Write(buf.Bytes())
		pp.argsW.Close()
	}()
	return done
}

// createCgroup makes the run's own cgroup, or returns nil when the spec
// asks for none or no cgroup is usable.
func (b *Backend) createCgroup(s *sandboxSpec) (*runCgroup, error) {
	if s.cgroup == nil || b.cg == nil {
		return nil, nil
	}
	return b.cg.create(*s.cgroup)
}

func (b *Backend) destroyCgroup(cg *runCgroup) {
	if err := cg.destroy(); err != nil {
		b.log.Error("sandbox cgroup left behind", "err", err)
	}
}

// bwrapCmd is the bubblewrap process, not started.
func (b *Backend) bwrapCmd(s *sandboxSpec, pipes *bwrapPipes, stdout, stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(b.bwrap, append([]string{"--args", "4", "--"}, b.command(s)...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"} // bwrap needs nothing of the worker's environment
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{pipes.infoW, pipes.argsR, pipes.seccompR} // fd 3: --json-status-fd, fd 4: --args, fd 5: --seccomp
	// Pdeathsig: a worker that dies takes its sandboxes with it
	// (bubblewrap's --die-with-parent does the rest).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// start starts bubblewrap and moves it into the run's cgroup (if any)
// before it can start anything of the sandbox.
func (b *Backend) start(cmd *exec.Cmd, pipes *bwrapPipes, cg *runCgroup) error {
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sandbox: start %s: %w", b.bwrap, err)
	}
	pipes.closeChildEnds()
	if cg == nil {
		return nil
	}
	// bwrap is now blocked reading its options from the pipe, which
	// nothing has written yet: it has forked nothing and run nothing
	// of the sandbox. Moving it into the run's cgroup here is therefore
	// race-free, and everything the sandbox starts is born inside. (A
	// clone straight into the cgroup, SysProcAttr.UseCgroupFD, would
	// do the same on cgroup v2 only; v1 hosts need this way.)
	if err := cg.add(cmd.Process.Pid); err != nil {
		pipes.argsW.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return err
	}
	return nil
}

// waitOrKill waits for bubblewrap to exit. At the timeout, when ctx ends
// or when abort is closed (the stdio bridge failed) first, it kills the
// sandbox's init (pidfd) and bubblewrap's process group, then waits for
// the exit.
func waitOrKill(ctx context.Context, cmd *exec.Cmd, pidfd int, timeout time.Duration, abort <-chan struct{}) (timedOut, cancelled bool, waitErr error) {
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	// A timer, not an injected clock: this bounds a real process.
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-waitc:
		return false, false, err
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	case <-abort: // the stdio bridge failed: its error is the run's
	}
	if pidfd >= 0 {
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return timedOut, cancelled, <-waitc
}

// execError is the error of a sandbox that ran to its end or its timeout:
// none for the command's own failures, one when bubblewrap could not be
// waited for or could not set the sandbox up.
func (b *Backend) execError(res execResult, waitErr error, status *bwrapStatus) error {
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil, errors.As(waitErr, &exitErr):
	case errors.Is(waitErr, exec.ErrWaitDelay):
		// The tree is dead (reap) but something kept a pipe open a while;
		// what was read is the output.
		b.log.Warn("sandbox output pipes stayed open after exit")
	default:
		return fmt.Errorf("sandbox: wait for %s: %w", b.bwrap, waitErr)
	}
	if !res.timedOut && res.exitCode != 0 && !status.commandRan() {
		return fmt.Errorf("sandbox: bubblewrap could not set up the sandbox: %s", firstLine(string(res.stderr)))
	}
	return nil
}

// sandboxInit reads bubblewrap's first --json-status-fd report and returns
// a pidfd for the sandbox's init process (-1 when it is already gone), and
// the status, to read the rest from once bubblewrap has exited. A pidfd
// cannot be confused with a later process that reuses the pid.
func sandboxInit(info *os.File) (int, *bwrapStatus) {
	_ = info.SetReadDeadline(time.Now().Add(10 * time.Second))
	status := &bwrapStatus{r: info, dec: json.NewDecoder(info)}
	var v struct {
		ChildPID int `json:"child-pid"`
	}
	// Decode one value: the fd stays open as long as the sandbox runs.
	if err := status.dec.Decode(&v); err != nil || v.ChildPID <= 0 {
		return -1, status
	}
	fd, err := unix.PidfdOpen(v.ChildPID, 0)
	if err != nil {
		return -1, status
	}
	return fd, status
}

// bwrapStatus is bubblewrap's --json-status-fd. After the child's pid it
// reports the command's exit code, but only when the sandbox was set up
// and the command executed: its absence is how a failed setup is told
// from the command's own failure. The command cannot write to it
// (bubblewrap closes it in the sandbox), unlike its stderr, where a
// program can print "bwrap: ..." itself.
type bwrapStatus struct {
	r   *os.File
	dec *json.Decoder
}

// commandRan reads the rest of the status (bubblewrap has exited, so it
// ends) and says whether it reported the command's exit code.
func (s *bwrapStatus) commandRan() bool {
	_ = s.r.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var v map[string]json.RawMessage
		if err := s.dec.Decode(&v); err != nil {
			return false
		}
		if _, ok := v["exit-code"]; ok {
			return true
		}
	}
}

// reap kills the sandbox's init (a no-op when it has exited) and waits up
// to 10s for it to be gone, which means every process of its pid namespace
// is gone too.
func (b *Backend) reap(pidfd int) bool {
	if pidfd < 0 {
		return true
	}
	_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return false
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, ms)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}

// writeEtc writes the synthesized /etc files into dir.
func writeEtc(dir string, uid uint32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range etcFiles(uid) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// etcFiles are the synthesized /etc files of a sandbox whose processes
// run as uid.
func etcFiles(uid uint32) map[string]string {
	id := strconv.FormatUint(uint64(uid), 10)
	return map[string]string{
		"passwd":        "root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:" + id + ":" + id + ":sandbox:/tmp:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nsandbox:x:" + id + ":\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
	}
}

// countUserTasks counts the processes and threads of uid (best effort).
func countUserTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := strconv.Itoa(uid)
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var realUID string
		threads := 1
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					realUID = f[0]
				}
			} else if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if realUID == want {
			n += threads
		}
	}
	return n
}
