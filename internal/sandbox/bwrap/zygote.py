# The warm runner's zygote (warm.go). It runs as root with a few
# capabilities inside a bubblewrap sandbox made by the same builder as a
# cold run's, imports pytest once, and forks one child per run. It never
# reads a run's request itself: every child is a fork of a process that
# holds nothing of any run, so nothing passes from one run to the next.
#
# Per run the worker sends, on the control socket, one byte with the
# descriptors of the run: its socket, its stdin, stdout, stderr and the
# cgroup.procs files of its cgroup (opened by the worker). The zygote forks
# the child into a new pid namespace, where it is pid 1, and the child:
#   1. moves itself into the run's cgroup, then reads the request (argv,
#      environment, files, uid, limits) from the run's socket;
#   2. unshares mount, network, IPC and UTS namespaces, mounts fresh tmpfs
#      on /tmp, /dev/shm, /workspace and /var/outputs and a new /proc,
#      writes the files and the run's /etc/passwd and /etc/group;
#   3. sends the workspace and outputs roots (descriptors the worker
#      collects from, as it does a cold run's directories), closes the
#      socket;
#   4. sets the rlimits, drops to the run's uid with no capabilities and
#      no_new_privs, closes every other descriptor, forks once more and
#      runs the argv in-process (runpy) in that fork; pid 1 stays behind
#      as the namespace's reaper (reap_run) and exits with its status.
# The zygote waits for the child (a pidfd) and sends its exit status on
# the run's socket.
import ctypes, json, os, resource, selectors, signal, socket, struct, sys

import pytest  # noqa: F401  the point of the zygote
import _pytest.assertion.rewrite, _pytest.junitxml, _pytest.python, _pytest.terminal  # noqa: F401,E401
import _pytest.capture, _pytest.fixtures, _pytest.main, _pytest.runner, _pytest.skipping  # noqa: F401,E401

warm_preload()  # warmrun.py, prepended

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
RLIMITS = {"as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
           "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE}


def check(ret, what):
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def mount(src, dst, fstype, flags, data=None):
    check(libc.mount(src.encode(), dst.encode(), fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                     data.encode() if data else None), "mount " + dst)


def tmpfs(dst, size, mode, uid=0):
    mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV, "size=%d,mode=%o,uid=%d,gid=%d" % (size, mode, uid, uid))


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("worker closed the run socket")
        buf += chunk
    return buf


def send_json(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    msg = struct.pack(">I", len(data)) + data
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))] if fds else []
    sock.sendmsg([msg], anc)


def lo_up():
    # SIOCSIFFLAGS IFF_UP on lo: a fresh network namespace has it down;
    # bubblewrap brings it up for a cold run, so tests may bind 127.0.0.1.
    import fcntl
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", 1 | 0x40))
    finally:
        s.close()


def write_files(req):
    uid = req["uid"]
    for name, data in req["files"].items():
        path = os.path.join("/workspace", name)
        parent = os.path.dirname(path)
        made = []
        while not os.path.isdir(parent):
            made.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(made):
            os.mkdir(d, 0o755)
            os.chown(d, uid, uid)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        os.write(fd, bytes.fromhex(data)) if data else None
        os.fchown(fd, uid, uid)
        os.close(fd)


def etc_files(req):
    # The run's passwd and group, over the zygote's: written on a scratch
    # tmpfs at /var/inputs (empty in a run with no inputs), bound, then the
    # scratch is detached.
    tmpfs("/var/inputs", 1 << 20, 0o755)
    for name, text in req["etc"].items():
        with open("/var/inputs/" + name, "w") as f:
            f.write(text)
        mount("/var/inputs/" + name, "/etc/" + name, None, MS_BIND)
        mount("none", "/etc/" + name, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    check(libc.umount2(b"/var/inputs", MNT_DETACH), "umount /var/inputs")


def isolate(req):
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # of the run's pid namespace
    uid = req["uid"]
    tmpfs("/tmp", req["tmp_size"], 0o1777)
    tmpfs("/dev/shm", min(req["tmp_size"], 64 << 20), 0o1777)
    tmpfs("/workspace", req["disk_quota"], 0o755, uid)
    tmpfs("/var/outputs", req["disk_quota"], 0o755, uid)
    etc_files(req)
    write_files(req)
    lo_up()
    ws = os.open("/workspace", os.O_RDONLY | os.O_DIRECTORY)
    outs = os.open("/var/outputs", os.O_RDONLY | os.O_DIRECTORY)
    return ws, outs


def drop_privileges(req):
    for name, value in req["rlimits"].items():
        resource.setrlimit(RLIMITS[name], (value, value))
    if req["cpu"] > 0:
        resource.setrlimit(resource.RLIMIT_CPU, (req["cpu"], req["cpu"] + 1))
    uid = req["uid"]
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop capability %d" % cap)
    os.setresuid(uid, uid, uid)  # clears the permitted, effective and ambient sets
    # Dumpable again, as after an exec: /proc/self is then the run's own,
    # not root's (the change of uid cleared it).
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def run(req):
    os.chdir("/workspace")
    req["rlimits"]["nproc"] += 1  # the reaper is a process of the run's uid too
    drop_privileges(req)
    os.closerange(3, 1 << 20)
    try:
        pid = os.fork()
    except OSError:
        pid = 0  # no reaper: the run is pid 1
    if pid == 0:
        warm_run(req["argv"], req["env"])  # warmrun.py, prepended
    reap_run(pid)


def reap_run(pid):
    # pid 1 of the run's pid namespace, as bubblewrap's init is in a cold
    # run: the kernel hands it the run's orphans (unreaped, their zombies
    # would count against the pids limit) and drops the signals it has no
    # handler for (so the run, not pid 1, dies of a signal it sends
    # itself). It reaps, and exits with the run's status once the run's
    # process has exited; the kernel then kills what is left.
    for sig in signal.valid_signals():
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
    for fd in (0, 1, 2):
        os.close(fd)  # the run's output ends when the run's processes are gone
    while True:
        try:
            died, status = os.wait()
        except ChildProcessError:
            os._exit(2)
        if died == pid:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def child(run_sock, in_fd, out_fd, err_fd, procs):
    # pid 1 of the run's pid namespace (its reaper, once the run is
    # forked); nothing of other runs but descriptors, closed first.
    keep = sorted([run_sock, in_fd, out_fd, err_fd] + procs)
    low = 3
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    for fd in procs:
        os.write(fd, b"0")  # into the run's cgroup
        os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.dup2(in_fd, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    for fd in (in_fd, out_fd, err_fd):
        os.close(fd)
    sock = socket.socket(fileno=run_sock)
    n, = struct.unpack(">I", recv_exact(sock, 4))
    req = json.loads(recv_exact(sock, n))
    try:
        ws, outs = isolate(req)
    except Exception as e:
        send_json(sock, {"error": "isolate: %s" % e})
        os._exit(2)
    send_json(sock, {"started": True}, [ws, outs])
    sock.close()
    os.close(ws)
    os.close(outs)
    run(req)


def spawn(fds, own_pidns):
    # The child is pid 1 of a new pid namespace: unshare it for the next
    # fork only, then return to the zygote's own.
    check(libc.unshare(CLONE_NEWPID), "unshare pid namespace")
    try:
        pid = os.fork()
    except OSError:
        check(libc.setns(own_pidns, CLONE_NEWPID), "setns")
        raise
    if pid != 0:
        check(libc.setns(own_pidns, CLONE_NEWPID), "setns")
    else:
        try:
            child(fds[0], fds[1], fds[2], fds[3], list(fds[4:]))
        except BaseException as e:
            os.write(2, ("warm runner child: %s\n" % e).encode())
        os._exit(2)
    return pid


def main():
    ctl = None
    for fd in range(3, 64):
        try:
            s = socket.socket(fileno=fd)
        except OSError:
            continue
        if s.type == socket.SOCK_SEQPACKET:
            ctl = s
            break
        s.detach()
    if ctl is None:
        sys.exit("warm runner: no control socket")
    own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY)
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ)
    sys.stdout.flush()
    sys.stderr.flush()
    ctl.send(b"R")  # ready
    while True:
        for key, _ in sel.select():
            if key.fileobj is ctl:
                receive(ctl, sel, own_pidns)
            else:
                reap(sel, key)


def receive(ctl, sel, own_pidns):
    msg, anc, _, _ = ctl.recvmsg(1, socket.CMSG_SPACE(8 * 4))
    if not msg:
        os._exit(0)  # the worker is gone
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += struct.unpack("%di" % (len(data) // 4), data[:len(data) - len(data) % 4])
    if len(fds) < 5:
        for fd in fds:
            os.close(fd)
        return
    try:
        pid = spawn(fds, own_pidns)
    except OSError as e:
        sock = socket.socket(fileno=fds[0])
        send_json(sock, {"error": "fork: %s" % e})
        sock.close()
        fds = fds[1:]
    else:
        sel.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, socket.socket(fileno=fds[0])))
        fds = fds[1:]
    for fd in fds:
        os.close(fd)


def reap(sel, key):
    pid, sock = key.data
    sel.unregister(key.fileobj)
    os.close(key.fileobj)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    try:
        send_json(sock, {"exit": code if code >= 0 else 128 - code})
    except OSError:
        pass  # the worker gave up on the run
    sock.close()


main()
