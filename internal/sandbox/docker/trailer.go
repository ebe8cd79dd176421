package docker

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
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

// trailers demultiplexes the trailers out of the two streams, and the
// results frame (results.go) that follows stdout's when the run asked for
// results.
type trailers struct {
	out, err *trailerWriter
	done     chan struct{} // closed when both trailers are in
	mu       sync.Mutex
	found    int
	exit     int
	frame    []byte // the results frame: head, then data
	headLen  int
	frameErr error // the frame broke its bounds
}

// newTrailers reads the trailers of the run with nonce; stdout's may
// carry a results frame of at most maxHead bytes of listing and maxData of
// contents.
func newTrailers(nonce string, stdout, stderr io.Writer, maxHead, maxData int64) *trailers {
	t := &trailers{done: make(chan struct{})}
	prefix := []byte("\x00autocoder-exit:" + nonce + ":")
	t.out = &trailerWriter{dst: stdout, prefix: prefix, t: t, maxHead: maxHead, maxData: maxData}
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

// results is the results frame (nil if none came) and the length of its
// head, or why it was refused. Call it once both trailers are in.
func (t *trailers) results() (frame []byte, headLen int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.frame, t.headLen, t.frameErr
}

// flush passes on what is held back (a stream that ended without its trailer).
func (t *trailers) flush() {
	t.out.flush()
	t.err.flush()
}

// trailerWriter passes a stream on to dst, holding back the few bytes at
// its end that could start a trailer (from a NUL on), and drops the
// trailer; on stdout (maxData > 0) it keeps the results frame after it.
type trailerWriter struct {
	dst     io.Writer
	prefix  []byte
	t       *trailers
	pending []byte
	found   bool
	// The results frame: its bounds, and while it comes in, its length,
	// what has come and the exit code to report once it is whole.
	maxHead, maxData int64
	want             int
	frame            []byte
	code             int
}

// maxTrailer is the longest trailer: prefix, an exit code and the frame's
// two lengths, and "\n".
func (w *trailerWriter) maxTrailer() int { return len(w.prefix) + 12 + 2*21 }

func (w *trailerWriter) Write(p []byte) (int, error) {
	n := len(p)
	if w.found {
		w.takeFrame(p)
		return n, nil
	}
	w.pending = append(w.pending, p...)
	if i := bytes.Index(w.pending, w.prefix); i >= 0 {
		rest := w.pending[i+len(w.prefix):]
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			if code, head, data, ok := parseTrailer(string(rest[:j])); ok {
				w.pass(w.pending[:i])
				after := rest[j+1:]
				w.pending, w.found = nil, true
				w.startFrame(code, head, data)
				w.takeFrame(after)
				return n, nil
			}
		} else if len(rest) <= w.maxTrailer()-len(w.prefix) {
			w.pass(w.pending[:i])
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
	w.pass(w.pending[:cut])
	w.pending = append([]byte(nil), w.pending[cut:]...)
	return n, nil
}

// parseTrailer reads "<code>" or "<code>:<head>:<data>".
func parseTrailer(s string) (code int, head, data int64, ok bool) {
	f := strings.Split(s, ":")
	if len(f) != 1 && len(f) != 3 {
		return 0, 0, 0, false
	}
	code, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0, 0, false
	}
	if len(f) == 3 {
		h, err1 := strconv.ParseInt(f[1], 10, 64)
		d, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || h < 0 || d < 0 {
			return 0, 0, 0, false
		}
		head, data = h, d
	}
	return code, head, data, true
}

// startFrame begins the results frame announced by the trailer, or
// reports the trailer at once when there is none or it is out of bounds.
func (w *trailerWriter) startFrame(code int, head, data int64) {
	switch {
	case head == 0 && data == 0:
		w.t.got(code)
	case w.maxData <= 0 || head > w.maxHead || data > w.maxData:
		w.t.mu.Lock()
		w.t.frameErr = fmt.Errorf("docker: the sandbox announced results of %d+%d bytes, over the bound of %d+%d",
			head, data, w.maxHead, w.maxData)
		w.t.mu.Unlock()
		w.t.got(code)
	default:
		w.want, w.code = int(head+data), code
		w.frame = make([]byte, 0, min(w.want, 1<<20))
		w.t.mu.Lock()
		w.t.headLen = int(head)
		w.t.mu.Unlock()
	}
}

// takeFrame adds p to the results frame; what follows it is dropped.
func (w *trailerWriter) takeFrame(p []byte) {
	if w.want == 0 {
		return
	}
	w.frame = append(w.frame, p[:min(len(p), w.want-len(w.frame))]...)
	if len(w.frame) == w.want {
		w.want = 0
		w.t.mu.Lock()
		w.t.frame = w.frame
		w.t.mu.Unlock()
		w.t.got(w.code)
	}
}

func (w *trailerWriter) flush() {
	w.pass(w.pending)
	w.pending = nil
}

// pass writes p on, unless empty: a stdio bridge's pipe blocks even an
// empty write until its reader reads.
func (w *trailerWriter) pass(p []byte) {
	if len(p) > 0 {
		_, _ = w.dst.Write(p)
	}
}
