package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// StdioFunc talks to a run's command while it runs (RunSpec.Stdio): a
// bridge between a sandboxed program and the worker, such as code mode's
// tool calls. It gets the command's standard input (closing it is EOF to
// the command) and its standard output as the command writes it (EOF once
// every process of the sandbox is gone). It must read stdout on until EOF
// (or return): a backend may hold the run's end until what the command
// wrote has been read. ctx ends when the run ends: the command exited,
// timed out or was cancelled; the function must then return soon. Run returns only after it has returned. An error from it
// ends the run at once: the sandbox is killed and Run returns the error,
// wrapped (errors.Is finds it).
type StdioFunc func(ctx context.Context, stdin io.WriteCloser, stdout io.Reader) error

// ErrStdioFailed wraps the error of a RunSpec.Stdio that ended its run.
var ErrStdioFailed = errors.New("sandbox: the run's stdio bridge failed")

// StdioRun is a StdioFunc running beside a command: the backends' shared
// half of RunSpec.Stdio. Start it once the command has started, select on
// Failed to kill the sandbox early, and call Finish once it is gone.
type StdioRun struct {
	cancel context.CancelFunc
	stdin  io.Closer
	failed chan struct{}
	done   chan struct{}
	once   sync.Once
	err    error
}

// StartStdio runs fn in a goroutine with a context that Finish ends.
func StartStdio(ctx context.Context, fn StdioFunc, stdin io.WriteCloser, stdout io.Reader) *StdioRun {
	ctx, cancel := context.WithCancel(ctx)
	s := &StdioRun{cancel: cancel, stdin: stdin, failed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := fn(ctx, onceCloser{WriteCloser: stdin, once: &s.once}, stdout)
		if err != nil {
			s.err = err
			close(s.failed)
		}
	}()
	return s
}

// Failed is closed when the function returned an error: kill the sandbox.
// A nil *StdioRun's channel is nil (never ready).
func (s *StdioRun) Failed() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.failed
}

// Finish ends the function's context once the command is gone, closes
// its stdin, waits for it and returns its error, wrapped in
// ErrStdioFailed.
func (s *StdioRun) Finish() error {
	if s == nil {
		return nil
	}
	s.cancel()
	s.once.Do(func() { _ = s.stdin.Close() })
	<-s.done
	if s.err != nil {
		return fmt.Errorf("%w: %w", ErrStdioFailed, s.err)
	}
	return nil
}

// onceCloser lets both the function and Finish close stdin.
type onceCloser struct {
	io.WriteCloser
	once *sync.Once
}

func (c onceCloser) Close() error {
	var err error
	c.once.Do(func() { err = c.WriteCloser.Close() })
	return err
}
