package bwrap

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// stdioPipes are the pipes of a run with RunSpec.Stdio: the command's
// stdin and stdout, real pipes handed to bubblewrap (no copying goroutine
// of os/exec stands between the bridge and the sandbox, so nothing of it
// outlives the run).
type stdioPipes struct {
	inR, inW, outR, outW *os.File
}

// attachStdio gives cmd the pipes when fn is set; with no fn it returns
// nil, and every method of a nil *stdioPipes does nothing.
func attachStdio(cmd *exec.Cmd, fn sandbox.StdioFunc) (*stdioPipes, error) {
	if fn == nil {
		return nil, nil
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("sandbox: pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	return &stdioPipes{inR: inR, inW: inW, outR: outR, outW: outW}, nil
}

// start closes the ends bubblewrap inherited and starts fn on ours.
func (p *stdioPipes) start(ctx context.Context, fn sandbox.StdioFunc) *sandbox.StdioRun {
	if p == nil {
		return nil
	}
	p.inR.Close()
	p.outW.Close()
	return sandbox.StartStdio(ctx, fn, p.inW, p.outR)
}

// close closes every end (closing one twice is harmless).
func (p *stdioPipes) close() {
	if p == nil {
		return
	}
	for _, f := range []*os.File{p.inR, p.inW, p.outR, p.outW} {
		_ = f.Close()
	}
}
