package bwrap

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Each run of this backend gets a cgroup of its own, so that its
// memory, CPU and process limits hold for the sandbox as a whole and not
// only per process (rlimits stay in place as a second line). This is a
// small implementation of its own rather than containerd/cgroups: that
// module brings systemd D-Bus, eBPF device filters and protobuf stats this
// backend never uses, while what it needs here is mkdir, a handful of
// writes, kill and rmdir on the two kernel interfaces.

// cgroupParent is the directory under the worker's own cgroup that holds
// one cgroup per run, named <worker pid>-<seq>.
const cgroupParent = "autocoder-sandbox"

// cgroupWorkerLeaf is where the worker moves itself on cgroup v2 when its
// own cgroup holds processes: the "no internal processes" rule forbids
// enabling controllers for children of a cgroup that has members.
const cgroupWorkerLeaf = "autocoder-worker"

// cgroupPeriod is the CFS period, in microseconds, of the CPU quota.
const cgroupPeriod = 100_000

// cgroupLimits are what one run's cgroup enforces.
type cgroupLimits struct {
	memory int64   // bytes, memory and swap alike
	cpus   float64 // CPU quota in cores
	pids   int64   // processes and threads
}

// cgroups makes per-run cgroups on cgroup v2 or v1. Which one is found at
// start-up; a nil *cgroups means none is usable and only rlimits apply.
type cgroups struct {
	v2 bool
	// parents maps a controller (memory, cpu, pids) to the directory under
	// which run cgroups are made: one directory for v2, one per hierarchy
	// for v1 (several controllers can share a v1 hierarchy).
	parents map[string]string
	// memsw: the kernel accounts swap (v1 memory.memsw.limit_in_bytes, v2
	// memory.swap.max exist), so "no swap" is enforced, not just asked.
	memsw bool
}

// cgroupControllers are the controllers a run cgroup uses.
var cgroupControllers = []string{"memory", "cpu", "pids"}

// detectCgroups finds a usable cgroup hierarchy: v2 when the unified one
// has the memory, cpu and pids controllers (or can be given them), else
// the v1 hierarchies of those controllers. A controller counts only when a
// child cgroup can really be made under the worker's own cgroup. The error
// says why none could be used.
func detectCgroups() (*cgroups, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	var v2err error
	if m, ok := mounts[""]; ok {
		if path, ok := own[""]; ok {
			var c *cgroups
			if c, v2err = detectV2(filepath.Join(m.dir, relCgroup(path, m.root))); v2err == nil {
				return c, nil
			}
		}
	}
	c := &cgroups{parents: map[string]string{}}
	var why []string
	for _, ctrl := range cgroupControllers {
		m, ok := mounts[ctrl]
		path, inOwn := own[ctrl]
		if !ok || !inOwn {
			why = append(why, ctrl+": no v1 hierarchy")
			continue
		}
		parent := filepath.Join(m.dir, relCgroup(path, m.root), cgroupParent)
		if err := probeCgroupDir(parent); err != nil {
			why = append(why, ctrl+": "+err.Error())
			continue
		}
		c.parents[ctrl] = parent
	}
	if len(c.parents) == 0 {
		if v2err != nil {
			why = append([]string{"v2: " + v2err.Error()}, why...)
		}
		return nil, errors.New(strings.Join(why, "; "))
	}
	if dir, ok := c.parents["memory"]; ok {
		_, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes"))
		c.memsw = err == nil
	}
	return c, nil
}

// detectV2 prepares own (the worker's cgroup v2 directory) to hold run
// cgroups with the memory, cpu and pids controllers.
func detectV2(own string) (*cgroups, error) {
	avail, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	for _, ctrl := range cgroupControllers {
		if !slices.Contains(strings.Fields(string(avail)), ctrl) {
			return nil, fmt.Errorf("controller %s is not available in %s", ctrl, own)
		}
	}
	// Controllers for children can only be enabled in a cgroup with no
	// members of its own (except the root). A delegated cgroup (systemd
	// Delegate=yes, a container's cgroup namespace) usually holds the
	// worker itself: move the worker into a leaf beside the runs, as
	// runc and systemd's delegation guidance do. That changes the whole
	// process's cgroup once; a second backend in the same process finds
	// itself in the leaf already and uses its parent.
	if filepath.Base(own) == cgroupWorkerLeaf {
		own = filepath.Dir(own)
	}
	if err := enableV2(own); err != nil {
		if !errors.Is(err, syscall.EBUSY) {
			return nil, err
		}
		leaf := filepath.Join(own, cgroupWorkerLeaf)
		if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
			return nil, err
		}
		if err := writeCgroupFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			return nil, fmt.Errorf("move the worker into %s: %w", leaf, err)
		}
		if err := enableV2(own); err != nil {
			return nil, fmt.Errorf("%w (other processes share the worker's cgroup %s)", err, own)
		}
	}
	parent := filepath.Join(own, cgroupParent)
	if err := os.Mkdir(parent, 0o755); err != nil && !os.IsExist(err) {
		return nil, err
	}
	if err := enableV2(parent); err != nil {
		return nil, err
	}
	if err := probeCgroupDir(parent); err != nil {
		return nil, err
	}
	c := &cgroups{v2: true, parents: map[string]string{}}
	_, err = os.Stat(filepath.Join(parent, "memory.swap.max"))
	c.memsw = err == nil
	for _, ctrl := range cgroupControllers {
		c.parents[ctrl] = parent
	}
	return c, nil
}

// enableV2 enables the run controllers for dir's children.
func enableV2(dir string) error {
	return writeCgroupFile(dir, "cgroup.subtree_control", "+memory +cpu +pids")
}

// probeCgroupDir makes parent and checks that a child can be made in it.
func probeCgroupDir(parent string) error {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	probe := filepath.Join(parent, fmt.Sprintf("probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return os.Remove(probe)
}

// cgroupMount is where a hierarchy is mounted and which of its cgroups is
// its root (not "/" inside a container without a cgroup namespace).
type cgroupMount struct{ dir, root string }

// cgroupMounts maps each v1 controller to its hierarchy's mount, and ""
// to the v2 one, from /proc/self/mountinfo.
func cgroupMounts() (map[string]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]cgroupMount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		m := cgroupMount{dir: unescapeMountinfo(a[4]), root: unescapeMountinfo(a[3])}
		switch b[0] {
		case "cgroup2":
			if _, seen := out[""]; !seen {
				out[""] = m
			}
		case "cgroup":
			for _, opt := range strings.Split(b[2], ",") {
				if slices.Contains(cgroupControllers, opt) {
					if _, seen := out[opt]; !seen {
						out[opt] = m
					}
				}
			}
		}
	}
	return out, sc.Err()
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups maps each v1 controller, and "" for v2, to the worker's
// cgroup path, from /proc/self/cgroup.
func ownCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			out[ctrl] = parts[2]
		}
	}
	return out, nil
}

// relCgroup is path relative to a hierarchy mounted with root as its top.
func relCgroup(path, root string) string {
	if root != "/" {
		if rel, ok := strings.CutPrefix(path, root); ok {
			return "/" + strings.TrimPrefix(rel, "/")
		}
	}
	return path
}

// version is "v2" or "v1".
func (c *cgroups) version() string {
	if c.v2 {
		return "v2"
	}
	return "v1"
}

// enforced names the limits a run cgroup sets, e.g. [memory memory+swap cpu pids].
func (c *cgroups) enforced() []string {
	var out []string
	for _, ctrl := range cgroupControllers {
		if _, ok := c.parents[ctrl]; !ok {
			continue
		}
		out = append(out, ctrl)
		if ctrl == "memory" && c.memsw {
			out = append(out, "memory+swap")
		}
	}
	return out
}

// runCgroup is one run's cgroup: one directory on v2, one per hierarchy on v1.
type runCgroup struct {
	dirs []string
	v2   bool
}

// create makes a run's cgroup with its limits. Nothing is in it yet.
func (c *cgroups) create(lim cgroupLimits) (*runCgroup, error) {
	// Random, not a counter: several backends in one process (and their
	// tests) share the parent directory.
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	g := &runCgroup{v2: c.v2}
	made := map[string]bool{}
	for _, ctrl := range cgroupControllers {
		parent, ok := c.parents[ctrl]
		if !ok {
			continue
		}
		dir := filepath.Join(parent, name)
		if !made[dir] {
			if err := os.Mkdir(dir, 0o755); err != nil {
				g.destroy()
				return nil, fmt.Errorf("sandbox: create cgroup: %w", err)
			}
			made[dir] = true
			g.dirs = append(g.dirs, dir)
		}
		if err := c.limit(dir, ctrl, lim); err != nil {
			g.destroy()
			return nil, fmt.Errorf("sandbox: set cgroup %s limit: %w", ctrl, err)
		}
	}
	return g, nil
}

// limit writes one controller's limits into dir.
func (c *cgroups) limit(dir, ctrl string, lim cgroupLimits) error {
	quota := max(int64(math.Ceil(lim.cpus*cgroupPeriod)), 1000)
	mem := strconv.FormatInt(lim.memory, 10)
	switch {
	case ctrl == "memory" && lim.memory > 0 && c.v2:
		if err := writeCgroupFile(dir, "memory.max", mem); err != nil {
			return err
		}
		// No swap: a run over its limit is killed, not slowed to a crawl.
		// A kernel without swap accounting has no such file.
		if err := writeCgroupFile(dir, "memory.swap.max", "0"); err != nil && !os.IsNotExist(err) {
			return err
		}
	case ctrl == "memory" && lim.memory > 0:
		if err := writeCgroupFile(dir, "memory.limit_in_bytes", mem); err != nil {
			return err
		}
		if c.memsw {
			// memory+swap equal to memory: no swap. Set after the
			// memory limit, which it must not be below.
			return writeCgroupFile(dir, "memory.memsw.limit_in_bytes", mem)
		}
		_ = writeCgroupFile(dir, "memory.swappiness", "0")
	case ctrl == "cpu" && lim.cpus > 0 && c.v2:
		return writeCgroupFile(dir, "cpu.max", fmt.Sprintf("%d %d", quota, cgroupPeriod))
	case ctrl == "cpu" && lim.cpus > 0:
		if err := writeCgroupFile(dir, "cpu.cfs_period_us", strconv.Itoa(cgroupPeriod)); err != nil {
			return err
		}
		return writeCgroupFile(dir, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
	case ctrl == "pids" && lim.pids > 0:
		return writeCgroupFile(dir, "pids.max", strconv.FormatInt(lim.pids, 10))
	}
	return nil
}

// add moves the process pid (with all its threads) into the cgroup.
// Processes it forks afterwards are born in it.
func (g *runCgroup) add(pid int) error {
	for _, dir := range g.dirs {
		if err := writeCgroupFile(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("sandbox: join cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// procsFiles opens the cgroup.procs files of the cgroup for writing: a
// process given them moves itself in by writing "0" (the kernel checks
// the opener's credentials and cgroup namespace, the worker's).
func (g *runCgroup) procsFiles() ([]*os.File, error) {
	var out []*os.File
	for _, dir := range g.dirs {
		f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			for _, f := range out {
				f.Close()
			}
			return nil, fmt.Errorf("sandbox: open cgroup: %w", err)
		}
		out = append(out, f)
	}
	return out, nil
}

// kill kills everything in the cgroup, forks included, without waiting.
func (g *runCgroup) kill() {
	for _, dir := range g.dirs {
		if g.v2 {
			_ = writeCgroupFile(dir, "cgroup.kill", "1")
		} else {
			killCgroupProcs(dir)
		}
	}
}

// waitEmpty waits, for at most bound, until no process is left in the
// cgroup: a kill is delivered asynchronously, and what a run leaves is
// collected only once nothing of it can still write.
func (g *runCgroup) waitEmpty(bound time.Duration) {
	deadline := time.Now().Add(bound)
	for _, dir := range g.dirs {
		for {
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil || len(strings.TrimSpace(string(data))) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// destroy kills whatever is still in the cgroup and removes it. Normally
// the sandbox is gone already (its pid namespace died with its init); this
// catches anything that was not.
func (g *runCgroup) destroy() error {
	var errs []error
	for _, dir := range g.dirs {
		if g.v2 {
			// cgroup.kill (Linux 5.14) kills atomically, forks included.
			_ = writeCgroupFile(dir, "cgroup.kill", "1")
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("sandbox: remove cgroup %s: %w", dir, err))
				break
			}
			killCgroupProcs(dir)
			time.Sleep(20 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// killCgroupProcs sends SIGKILL to every process listed in dir. The worker
// is root, so a pid that exited and was reused between reading the list
// and signalling must not be hit: each pid is pinned with a pidfd first,
// and signalled only if the list still names it once pinned (the pidfd
// then refers to the member; if that member died meanwhile, the signal
// goes nowhere).
func killCgroupProcs(dir string) {
	procs := filepath.Join(dir, "cgroup.procs")
	listed := func() map[int]bool {
		data, err := os.ReadFile(procs)
		if err != nil {
			return nil
		}
		pids := map[int]bool{}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				pids[pid] = true
			}
		}
		return pids
	}
	pinned := map[int]int{} // pid -> pidfd
	for pid := range listed() {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			pinned[pid] = fd
		}
	}
	still := listed()
	for pid, fd := range pinned {
		if still[pid] {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		_ = unix.Close(fd)
	}
}

// removeStale removes run cgroups of workers that are gone (a crashed
// worker leaves its empty cgroups behind; rmdir fails on live ones).
func (c *cgroups) removeStale() {
	seen := map[string]bool{}
	for _, parent := range c.parents {
		if seen[parent] {
			continue
		}
		seen[parent] = true
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			pidStr, _, ok := strings.Cut(e.Name(), "-")
			pid, err := strconv.Atoi(pidStr)
			if !e.IsDir() || !ok || err != nil || pid == os.Getpid() {
				continue
			}
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				dir := filepath.Join(parent, e.Name())
				killCgroupProcs(dir)
				_ = os.Remove(dir)
			}
		}
	}
}

// writeCgroupFile writes one value to a cgroup control file. It does not
// create the file: control files exist or the kernel lacks the feature.
func writeCgroupFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
