package cache

import (
	"regexp"
	"testing"
)

func TestKeyFormat(t *testing.T) {
	t.Parallel()
	// Pinned: a change here silently turns every stored result into a miss,
	// so it must come with a new key version, not by accident. The hash was
	// checked independently: sha256 over (uint64 big-endian length, bytes)
	// for each part.
	got := Key("stage", []byte("plan"), []byte("v3"), []byte(`{"prompt":"x"}`))
	want := "autocoder:v1:stage:ab62996d28446e9a214b1ff0a2d14f052dfda65f1e0f90f4927ab853e602abb1"
	if got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	re := regexp.MustCompile(`^autocoder:v1:image:[0-9a-f]{64}$`)
	if k := Key("image", []byte("numpy")); !re.MatchString(k) {
		t.Errorf("Key = %q, want it to match %s", k, re)
	}
}

func TestKeyPartsAreLengthPrefixed(t *testing.T) {
	t.Parallel()
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i := range s {
			out[i] = []byte(s[i])
		}
		return out
	}
	tests := []struct {
		name string
		a, b [][]byte
	}{
		{"boundary moved", b("ab", "c"), b("a", "bc")},
		{"parts joined", b("a", "b"), b("ab")},
		{"trailing empty part", b("x"), b("x", "")},
		{"no parts vs one empty part", nil, b("")},
		{"length bytes inside a part", b("a", "b"), b("a\x00\x00\x00\x00\x00\x00\x00\x01b")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if ka, kb := Key("k", tt.a...), Key("k", tt.b...); ka == kb {
				t.Errorf("Key(%q) == Key(%q) = %s, want different keys", tt.a, tt.b, ka)
			}
		})
	}
	if Key("a", []byte("x")) == Key("b", []byte("x")) {
		t.Errorf("keys of different kinds are equal")
	}
	if Key("k", []byte("x"), []byte("y")) != Key("k", []byte("x"), []byte("y")) {
		t.Errorf("Key is not deterministic")
	}
}

func TestLockKey(t *testing.T) {
	t.Parallel()
	if got, want := lockKey("build/numpy"), "autocoder:v1:lock:build/numpy"; got != want {
		t.Errorf("lockKey = %q, want %q", got, want)
	}
}
