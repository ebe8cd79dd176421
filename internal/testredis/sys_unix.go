//go:build unix && !linux

package testredis

import (
	"os"
	"syscall"
)

// procAttr has nothing to add where Pdeathsig does not exist; Cleanup still
// stops the server when a test ends normally.
func procAttr() *syscall.SysProcAttr { return nil }

// Signals for Pause, Resume and Stop.
func pauseSignal() os.Signal  { return syscall.SIGSTOP }
func resumeSignal() os.Signal { return syscall.SIGCONT }
func stopSignal() os.Signal   { return syscall.SIGTERM }
