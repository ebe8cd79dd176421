package pyscan

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// writeExecutable writes an executable file that this process may exec at
// once. It holds syscall.ForkLock for reading while the file is open for
// writing: os/exec forks with that lock held for writing, so no child of
// this process can be forked meanwhile. Without it, a child forked by
// another goroutine inherits the writable descriptor (O_CLOEXEC closes it
// only at the child's exec), and exec'ing the file before that child
// execs fails with "text file busy" (ETXTBSY; golang.org/issue/22315).
func writeExecutable(path string, data []byte) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, 0o755)
}

// TestWriteExecutableWhileForking writes and runs executables while
// another goroutine forks without pause, as parallel tests do: none may
// fail with ETXTBSY.
func TestWriteExecutableWhileForking(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("/bin/true").Run()
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	dir := t.TempDir()
	for i := range 200 {
		p := filepath.Join(dir, fmt.Sprintf("x%d", i))
		if err := writeExecutable(p, []byte("#!/bin/sh\nexit 0\n")); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(p).CombinedOutput(); err != nil {
			t.Fatalf("run %d of a freshly written executable: %v\n%s", i, err, out)
		}
	}
}
