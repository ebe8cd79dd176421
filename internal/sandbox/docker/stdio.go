package docker

import (
	"context"
	"io"

	"github.com/docker/docker/api/types"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// stdioStream is the worker's end of a run with RunSpec.Stdio over the
// attach connection: the bridge writes the command's stdin on the
// hijacked connection (after the stub's request line), and reads its
// stdout from a pipe that the demultiplexed stream feeds. With no
// function it does nothing, and the run keeps its captured stdout.
type stdioStream struct {
	fn sandbox.StdioFunc
	pr *io.PipeReader
	pw *io.PipeWriter
}

func newStdioStream(fn sandbox.StdioFunc) *stdioStream {
	s := &stdioStream{fn: fn}
	if fn != nil {
		s.pr, s.pw = io.Pipe()
	}
	return s
}

// stdout is where the command's stdout goes: the bridge's pipe, or
// captured.
func (s *stdioStream) stdout(captured io.Writer) io.Writer {
	if s.fn == nil {
		return captured
	}
	return s.pw
}

// endOutput is EOF to the bridge: the stream is over.
func (s *stdioStream) endOutput() {
	if s.pw != nil {
		_ = s.pw.Close()
	}
}

// start runs the bridge on the connection.
func (s *stdioStream) start(ctx context.Context, att types.HijackedResponse) *sandbox.StdioRun {
	if s.fn == nil {
		return nil
	}
	// A bridge that returned reads no more: the stream's later writes
	// must fail, not block the copy that the run's end waits for.
	fn := func(ctx context.Context, stdin io.WriteCloser, stdout io.Reader) error {
		defer s.pr.Close()
		return s.fn(ctx, stdin, stdout)
	}
	return sandbox.StartStdio(ctx, fn, attachStdin{att}, s.pr)
}

// finish waits for the bridge.
func (s *stdioStream) finish(run *sandbox.StdioRun) error {
	if s.fn == nil {
		return nil
	}
	return run.Finish()
}

// attachStdin is the command's stdin: the hijacked connection, whose
// Close half-closes it (EOF to the stub, which passes it on).
type attachStdin struct{ att types.HijackedResponse }

func (a attachStdin) Write(p []byte) (int, error) { return a.att.Conn.Write(p) }
func (a attachStdin) Close() error                { return a.att.CloseWrite() }
