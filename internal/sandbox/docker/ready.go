package docker

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
)

// A pooled sandbox is made ready off the run's clock: the filler attaches
// to it, starts the engine's wait for its exit, and pings its stub, which
// answers once it has imported what it imports (a warm stub: pytest). A
// run that takes it then makes no engine call before its request: it
// writes the request on the open attach connection.

// readyTimeout bounds the stub's answer to the ping (a loaded host can
// take seconds to import pytest).
const readyTimeout = 2 * time.Minute

// maxReadyBytes bounds what the worker reads from a stub before its ready
// line (nothing, normally).
const maxReadyBytes = 64 << 10

// connect attaches to bx and starts the wait for its exit, unless done.
func (b *Backend) connect(ctx context.Context, bx *box) error {
	if bx.att == nil {
		att, err := b.cli.ContainerAttach(ctx, bx.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		if err != nil {
			return fmt.Errorf("docker: attach to sandbox: %w", err)
		}
		bx.att = &att
	}
	if bx.watch == nil {
		// Before the command can exit, so the exit is not missed; not
		// cancelled with a run's ctx, which may end first.
		waitCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		exits, errs := b.cli.ContainerWait(waitCtx, bx.id, container.WaitConditionNotRunning)
		bx.watch, bx.stopWatch = &exitWatch{exits: exits, errs: errs}, cancel
	}
	return nil
}

// release closes what connect opened.
func (bx *box) release() {
	if bx.att != nil {
		bx.att.Close()
	}
	if bx.stopWatch != nil {
		bx.stopWatch()
	}
}

// discard releases bx and removes its container in the background.
func (b *Backend) discard(bx *box) {
	bx.release()
	b.removeLater(bx.id)
}

// makeReady connects to a pooled bx and waits for its stub's answer to a
// ping.
func (b *Backend) makeReady(ctx context.Context, bx *box) error {
	if err := b.connect(ctx, bx); err != nil {
		return err
	}
	nonce := newNonce()
	line, _ := json.Marshal(map[string]string{"ping": nonce})
	if _, err := bx.att.Conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("docker: ping the sandbox: %w", err)
	}
	_ = bx.att.Conn.SetReadDeadline(time.Now().Add(readyTimeout))
	defer bx.att.Conn.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = bx.att.Conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	want := []byte("\x00autocoder-ready:" + nonce + "\n")
	var out []byte
	for read := 0; !bytes.HasSuffix(out, want); {
		stream, payload, err := readFrame(bx.att.Reader, maxReadyBytes-read)
		if err != nil {
			return fmt.Errorf("docker: the sandbox did not answer its ping: %w", err)
		}
		read += len(payload)
		if stream == 1 {
			out = append(out, payload...)
		}
	}
	return nil
}

// readFrame reads one frame of the engine's multiplexed attach stream
// (stdcopy's: stream, three zero bytes, a big-endian length, the payload)
// of at most limit bytes.
func readFrame(r io.Reader, limit int) (stream byte, payload []byte, err error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[4:])
	if int64(n) > int64(limit) {
		return 0, nil, fmt.Errorf("more than %d bytes before the answer", maxReadyBytes)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return h[0], payload, nil
}
