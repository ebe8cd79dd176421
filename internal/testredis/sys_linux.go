package testredis

import (
	"os"
	"syscall"
)

// procAttr makes the kernel kill redis-server if the test binary dies without
// running its cleanups (a panic, or go test's timeout), so no server outlives
// its test. Pdeathsig follows the thread that started the child; Go keeps that
// thread alive unless a goroutine locked to it exits, which tests do not do.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// Signals for Pause, Resume and Stop.
func pauseSignal() os.Signal  { return syscall.SIGSTOP }
func resumeSignal() os.Signal { return syscall.SIGCONT }
func stopSignal() os.Signal   { return syscall.SIGTERM }
