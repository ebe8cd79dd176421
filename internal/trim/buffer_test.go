package trim

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBuffer(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string // exact, when not truncated
		trunc  bool
	}{
		{"empty", 100, nil, "", false},
		{"fits", 100, []string{"hello ", "world"}, "hello world", false},
		{"exactly the limit", 64, []string{strings.Repeat("a", 64)}, strings.Repeat("a", 64), false},
		{"one write over", 64, []string{strings.Repeat("a", 65)}, "", true},
		{"many small writes", 100, strings.Split(strings.Repeat("x", 500), ""), "", true},
		{"one huge write", 100, []string{"HEAD" + strings.Repeat("m", 10000) + "TAIL"}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuffer(tc.limit)
			total := 0
			for _, w := range tc.writes {
				n, err := b.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write = %d, %v", n, err)
				}
				total += len(w)
			}
			got := b.Bytes()
			if b.Truncated() != tc.trunc {
				t.Errorf("Truncated = %v, want %v", b.Truncated(), tc.trunc)
			}
			if b.Len() != int64(total) {
				t.Errorf("Len = %d, want %d", b.Len(), total)
			}
			if !tc.trunc {
				if string(got) != tc.want {
					t.Errorf("Bytes = %q, want %q", got, tc.want)
				}
				return
			}
			if len(got) > tc.limit {
				t.Errorf("len(Bytes) = %d > limit %d", len(got), tc.limit)
			}
			if !bytes.Contains(got, []byte("bytes omitted")) {
				t.Errorf("no marker in %q", got)
			}
		})
	}
}

func TestBufferKeepsHeadAndTail(t *testing.T) {
	b := NewBuffer(300)
	b.Write([]byte("BEGIN\n"))
	for i := 0; i < 1000; i++ {
		b.Write([]byte("line of noise\n"))
	}
	b.Write([]byte("Traceback: the end\n"))
	got := string(b.Bytes())
	if !strings.HasPrefix(got, "BEGIN\nline of noise") || !strings.HasSuffix(got, "Traceback: the end\n") {
		t.Errorf("head or tail lost:\n%s", got)
	}
}

func TestBufferMarkerCount(t *testing.T) {
	b := NewBuffer(200)
	data := strings.Repeat("0123456789", 100)
	b.Write([]byte(data))
	got := string(b.Bytes())
	head, rest, _ := strings.Cut(got, "\n... [")
	countStr, tail, _ := strings.Cut(rest, " bytes omitted] ...\n")
	if head+tail == "" || !strings.HasPrefix(data, head) || !strings.HasSuffix(data, tail) {
		t.Fatalf("Bytes = %q", got)
	}
	if want := len(data) - len(head) - len(tail); countStr != strconv.Itoa(want) {
		t.Errorf("marker says %s omitted, want %d", countStr, want)
	}
}

func TestHeadTailAndEnds(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes, two per rune
	for _, got := range []string{Head(long, 51), Tail(long, 51), HeadTail(long, 101)} {
		if !utf8.ValidString(got) {
			t.Errorf("invalid UTF-8 after trimming: %q", got)
		}
	}
	if got := Tail("short", 10); got != "short" {
		t.Errorf("Tail(short) = %q", got)
	}
	if got := Tail(strings.Repeat("a", 100)+"END", 40); !strings.HasSuffix(got, "END") || len(got) > 40 {
		t.Errorf("TrimTail = %q", got)
	}
	if got := Head("START"+strings.Repeat("a", 100), 40); !strings.HasPrefix(got, "START") || len(got) > 40 {
		t.Errorf("TrimHead = %q", got)
	}
}
