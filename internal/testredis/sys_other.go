//go:build !unix

package testredis

import (
	"os"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return nil }

// Without job-control signals Pause and Resume cannot work (they fail the
// test), and Stop can only kill.
func pauseSignal() os.Signal  { return nil }
func resumeSignal() os.Signal { return nil }
func stopSignal() os.Signal   { return os.Kill }
