package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCgroupRunLifecycle makes a run cgroup on this host's hierarchy,
// checks its limits, puts a process in it, and removes it with the process
// still running. As root (CI) cgroups must be usable; an unprivileged
// developer without a delegated cgroup gets the reason instead.
func TestCgroupRunLifecycle(t *testing.T) {
	cg, err := detectCgroups()
	if err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("no usable cgroup as root: %v", err)
		}
		if err.Error() == "" {
			t.Fatal("detectCgroups failed without a reason")
		}
		t.Logf("unprivileged, no usable cgroup (rlimits only): %v", err)
		return
	}
	g, err := cg.create(cgroupLimits{memory: 256 << 20, cpus: 0.5, pids: 64})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pids.max": "64"}
	if cg.v2 {
		want["memory.max"] = "268435456"
		want["cpu.max"] = "50000 100000"
	} else {
		want["memory.limit_in_bytes"] = "268435456"
		want["cpu.cfs_quota_us"] = "50000"
		want["cpu.cfs_period_us"] = "100000"
		if cg.memsw {
			want["memory.memsw.limit_in_bytes"] = "268435456"
		}
	}
	got := map[string]string{}
	for _, dir := range g.dirs {
		for name := range want {
			if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				got[name] = strings.TrimSpace(string(data))
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cgroup limits (-want +got):\n%s", diff)
	}

	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	if err := g.add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		<-waitc
		t.Fatal(err)
	}
	for _, dir := range g.dirs {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil || !strings.Contains(" "+strings.Join(strings.Fields(string(data)), " ")+" ",
			" "+strconv.Itoa(cmd.Process.Pid)+" ") {
			t.Errorf("%s/cgroup.procs = %q (%v), want the process in it", dir, data, err)
		}
	}
	// destroy kills what is left; the process is reaped by Wait meanwhile.
	if err := g.destroy(); err != nil {
		t.Errorf("destroy: %v", err)
	}
	if err := <-waitc; err == nil {
		t.Error("the process in the cgroup was not killed")
	}
	for _, dir := range g.dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind (stat: %v)", dir, err)
		}
	}
}

// TestCgroupV2LimitFiles checks what is written for cgroup v2. This host's
// kernel may have its controllers on v1 (hybrid), so the files are those
// of a directory laid out like a v2 cgroup.
func TestCgroupV2LimitFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"memory.max", "memory.swap.max", "cpu.max", "pids.max"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("max\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &cgroups{v2: true}
	for _, ctrl := range cgroupControllers {
		if err := c.limit(dir, ctrl, cgroupLimits{memory: 512 << 20, cpus: 1.5, pids: 258}); err != nil {
			t.Fatalf("limit %s: %v", ctrl, err)
		}
	}
	want := map[string]string{"memory.max": "536870912", "memory.swap.max": "0", "cpu.max": "150000 100000", "pids.max": "258"}
	got := map[string]string{}
	for name := range want {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got[name] = string(data)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("v2 limit files (-want +got):\n%s", diff)
	}
	// A control file the kernel lacks is an error, not a file created.
	if err := writeCgroupFile(dir, "cgroup.kill", "1"); !os.IsNotExist(err) {
		t.Errorf("writeCgroupFile on a missing control file: err = %v, want not-exist", err)
	}
}

func TestCgroupPathHelpers(t *testing.T) {
	tests := []struct{ path, root, want string }{
		{"/a/b", "/", "/a/b"},
		{"/a/b", "/a", "/b"},
		{"/a", "/a", "/"},
		{"/x/y", "/a", "/x/y"},
	}
	for _, tc := range tests {
		if got := relCgroup(tc.path, tc.root); got != tc.want {
			t.Errorf("relCgroup(%q, %q) = %q, want %q", tc.path, tc.root, got, tc.want)
		}
	}
	if got := unescapeMountinfo(`/sys/fs/cgroup/a\040b`); got != "/sys/fs/cgroup/a b" {
		t.Errorf("unescapeMountinfo = %q", got)
	}
}
