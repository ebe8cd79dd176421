package docker

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
	"sync"
)

// The stub ends stdout and stderr each with a trailer,
// "\x00autocoder-exit:<nonce>:<code>\n", once every process of the run is
// dead. Seeing both tells the worker the run is over and its exit code,
// often hundreds of milliseconds before the engine reports the exit. The
// nonce is per run; a program that forged a trailer would only misreport
// its own exit code.

func newNonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// trailers demultiplexes the trailers out of the two streams.
type trailers struct {
	out, err *trailerWriter
	done     chan struct{} // closed when both trailers are in
	mu       sync.Mutex
	found    int
	exit     int
}

func newTrailers(nonce string, stdout, stderr io.Writer) *trailers {
	t := &trailers{done: make(chan struct{})}
	prefix := []byte("\x00autocoder-exit:" + nonce + ":")
	t.out = &trailerWriter{dst: stdout, prefix: prefix, t: t}
	t.err = &trailerWriter{dst: stderr, prefix: prefix, t: t}
	return t
}

func (t *trailers) got(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.found++
	t.exit = code
	if t.found == 2 {
		close(t.done)
	}
}

// seen reports whether both trailers arrived.
func (t *trailers) seen() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *trailers) code() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exit
}

// flush passes on what is held back (a stream that ended without its trailer).
func (t *trailers) flush() {
	t.out.flush()
	t.err.flush()
}

// trailerWriter passes a stream on to dst, holding back the few bytes at
// its end that could start a trailer (from a NUL on), and drops the
// trailer.
type trailerWriter struct {
	dst     io.Writer
	prefix  []byte
	t       *trailers
	pending []byte
	found   bool
}

// maxTrailer is the longest trailer: prefix plus an exit code and "\n".
func (w *trailerWriter) maxTrailer() int { return len(w.prefix) + 12 }

func (w *trailerWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.found {
		return n, nil
	}
	w.pending = append(w.pending, p...)
	if i := bytes.Index(w.pending, w.prefix); i >= 0 {
		rest := w.pending[i+len(w.prefix):]
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			code, err := strconv.Atoi(string(rest[:j]))
			if err == nil {
				w.dst.Write(w.pending[:i])
				w.pending, w.found = nil, true
				w.t.got(code)
				return n, nil
			}
		} else if len(rest) <= 12 {
			w.dst.Write(w.pending[:i])
			w.pending = append([]byte(nil), w.pending[i:]...)
			return n, nil
		}
	}
	// Only a NUL near the end can start a trailer: pass on everything
	// before it (a stdio bridge waits for whole lines).
	cut := len(w.pending)
	if z := bytes.LastIndexByte(w.pending, 0); z >= 0 && len(w.pending)-z <= w.maxTrailer() {
		cut = z
	}
	w.dst.Write(w.pending[:cut])
	w.pending = append([]byte(nil), w.pending[cut:]...)
	return n, nil
}

func (w *trailerWriter) flush() {
	if len(w.pending) > 0 {
		w.dst.Write(w.pending)
		w.pending = nil
	}
}
