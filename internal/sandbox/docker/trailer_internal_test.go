package docker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/sandbox"
)

// feed writes data to w in pieces of n bytes, as the engine's frames may
// cut it anywhere.
func feed(w *trailerWriter, data string, n int) {
	for len(data) > 0 {
		k := min(n, len(data))
		w.Write([]byte(data[:k]))
		data = data[k:]
	}
}

func TestTrailerResultsFrame(t *testing.T) {
	head := `{"files":[{"name":"a.txt","size":3}],"outputs":[]}`
	for _, piece := range []int{1, 2, 7, 1 << 20} {
		t.Run(fmt.Sprint(piece), func(t *testing.T) {
			var out, errb bytes.Buffer
			tr := newTrailers("n1", &out, &errb, 1<<10, 1<<10)
			feed(tr.out, "hello\x00world\n\x00autocoder-exit:n1:3:"+fmt.Sprint(len(head))+":3\n"+head+"abcAFTER", piece)
			feed(tr.err, "oops\n\x00autocoder-exit:n1:3\n", piece)
			if !tr.seen() || tr.code() != 3 {
				t.Fatalf("seen %v code %d", tr.seen(), tr.code())
			}
			tr.flush()
			if out.String() != "hello\x00world\n" || errb.String() != "oops\n" {
				t.Errorf("stdout %q stderr %q", out.String(), errb.String())
			}
			frame, headLen, err := tr.results()
			if err != nil || headLen != len(head) || string(frame) != head+"abc" {
				t.Fatalf("frame %q head %d err %v", frame, headLen, err)
			}
			var res sandbox.RunResult
			if err := applyResults(&res, &resultsSpec{Collect: []string{"a.txt"}, Budget: 10}, frame, headLen); err != nil {
				t.Fatal(err)
			}
			if string(res.Files["a.txt"]) != "abc" {
				t.Errorf("Files %q", res.Files)
			}
		})
	}
}

// A run that forges a trailer announcing a huge frame (a warm run can read
// the nonce from the stub's memory) gets a clear error at once: the worker
// neither allocates what it announced nor waits for it.
func TestTrailerFrameOverBound(t *testing.T) {
	var out, errb bytes.Buffer
	tr := newTrailers("n1", &out, &errb, 1<<10, 1<<10)
	tr.out.Write([]byte("\x00autocoder-exit:n1:0:99999999999:99999999999\n" + strings.Repeat("x", 1<<16)))
	tr.err.Write([]byte("\x00autocoder-exit:n1:0\n"))
	if !tr.seen() {
		t.Fatal("the trailers were not taken")
	}
	if _, _, err := tr.results(); err == nil || !strings.Contains(err.Error(), "over the bound") {
		t.Errorf("err = %v, want over the bound", err)
	}
	if cap(tr.out.frame) != 0 {
		t.Errorf("allocated %d bytes for a refused frame", cap(tr.out.frame))
	}
}

// Garbage that looks like a trailer, or a trailer of another nonce, is
// output.
func TestTrailerGarbage(t *testing.T) {
	var out, errb bytes.Buffer
	tr := newTrailers("n1", &out, &errb, 1<<10, 1<<10)
	junk := "\x00autocoder-exit:n2:0:5:5\n\x00autocoder-exit:n1:x\n\x00autocoder-exit:n1:1:2\n\x00\x00"
	tr.out.Write([]byte(junk))
	tr.flush()
	if tr.seen() || out.String() != junk {
		t.Errorf("seen %v, out %q", tr.seen(), out.String())
	}
}

func TestApplyResultsCaps(t *testing.T) {
	entries := []outputEntry{
		{Path: "answer", Kind: "f", Size: 2, Data: true},
		{Path: "big", Kind: "f", Size: 100},
		{Path: "d", Kind: "d"},
		{Path: "d/x", Kind: "f", Size: 1, Data: true},
		{Path: "d/y", Kind: "f", Size: 1, Data: true},
		{Path: "fifo", Kind: "o"},
		{Path: "wide", Kind: "x"},
	}
	head := resultsHead{Outputs: entries}
	head.Files = append(head.Files, struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	}{"unasked", 4})
	h, _ := json.Marshal(head)
	frame := append(h, []byte("zzzz"+"42"+"x"+"y")...)
	spec := &resultsSpec{Collect: []string{"junit.xml"}, Budget: 10,
		Outputs: &outputsSpec{MaxFiles: 4, MaxBytes: 10}}
	var res sandbox.RunResult
	if err := applyResults(&res, spec, frame, len(h)); err != nil {
		t.Fatal(err)
	}
	if res.Files != nil {
		t.Errorf("a file not asked for came back: %q", res.Files)
	}
	if string(res.Outputs["answer"]) != "42" || string(res.Outputs["d/x"]) != "x" || len(res.Outputs) != 2 {
		t.Errorf("Outputs %q", res.Outputs)
	}
	want := []string{"big", "d/y", "fifo", "... (the rest of wide was not read)"}
	if fmt.Sprint(res.OutputsOmitted) != fmt.Sprint(want) {
		t.Errorf("omitted %q, want %q", res.OutputsOmitted, want)
	}
	// A listing that does not match the data is refused.
	for _, bad := range [][]byte{append(append([]byte{}, frame...), 'q'), frame[:len(frame)-1]} {
		if err := applyResults(&sandbox.RunResult{}, spec, bad, len(h)); err == nil {
			t.Errorf("a frame of %d bytes for a listing of %d was taken", len(bad), len(frame))
		}
	}
	if err := applyResults(&sandbox.RunResult{}, spec, []byte("{not json"), 9); err == nil {
		t.Error("a malformed listing was taken")
	}
}
