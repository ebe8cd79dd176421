package cache_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/testredis"
	"github.com/autocoder/autocoder/pkg/cache"
	"github.com/autocoder/autocoder/pkg/cache/cachetest"
)

var (
	secretOld = bytes.Repeat([]byte("o"), 32)
	secretNew = bytes.Repeat([]byte("n"), 32)
)

func TestSignedRedisConformance(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	keys := keyring(t, cache.HMACKey{ID: "k1", Secret: secretOld})
	cachetest.Run(t, func(t *testing.T) cache.Cache {
		return signed(t, openRedis(t, url), keys, nil)
	})
}

func TestSignedDirConformance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := keyring(t, cache.HMACKey{ID: "k1", Secret: secretOld})
	cachetest.Run(t, func(t *testing.T) cache.Cache {
		return signed(t, openDir(t, dir), keys, nil)
	})
}

// rawStore is the store under a Signed cache, as someone with write access
// to it but without the key sees it.
type rawStore interface {
	get(t *testing.T, key string) []byte
	set(t *testing.T, key string, v []byte)
}

type rawRedis struct{ url string }

func (r rawRedis) get(t *testing.T, key string) []byte {
	v, err := rawClient(t, r.url).Get(context.Background(), key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (r rawRedis) set(t *testing.T, key string, v []byte) {
	if err := rawClient(t, r.url).Set(context.Background(), key, v, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// rawDir writes entries as another process on the cache directory would:
// a well-formed file (its checksum right), holding what the writer chose.
type rawDir struct{ dir string }

func (r rawDir) get(t *testing.T, key string) []byte {
	v, err := openDir(t, r.dir).Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (r rawDir) set(t *testing.T, key string, v []byte) {
	if err := openDir(t, r.dir).Set(context.Background(), key, v, 0); err != nil {
		t.Fatal(err)
	}
}

// TestSignedRefusesForgeries: every way of writing an entry without the key
// is a miss, counted by reason, and the next Set (the recomputation)
// replaces it with a good entry.
func TestSignedRefusesForgeries(t *testing.T) {
	t.Parallel()
	url := testredis.Start(t)
	stores := map[string]func(t *testing.T) (cache.Cache, rawStore){
		"redis": func(t *testing.T) (cache.Cache, rawStore) { return openRedis(t, url), rawRedis{url} },
		"dir": func(t *testing.T) (cache.Cache, rawStore) {
			dir := t.TempDir()
			return openDir(t, dir), rawDir{dir}
		},
	}
	forgeries := []struct {
		name   string
		forge  func(t *testing.T, raw rawStore, key string)
		reason string
	}{
		{"no signature", func(t *testing.T, raw rawStore, key string) {
			raw.set(t, key, []byte(`{"output":"forged"}`))
		}, cache.FailureUnsigned},
		{"value changed", func(t *testing.T, raw rawStore, key string) {
			v := raw.get(t, key)
			v[len(v)-1] ^= 1
			raw.set(t, key, v)
		}, cache.FailureBadSignature},
		{"truncated", func(t *testing.T, raw rawStore, key string) {
			raw.set(t, key, raw.get(t, key)[:10])
		}, cache.FailureUnsigned},
		{"signed by an unknown key", func(t *testing.T, raw rawStore, key string) {
			c := signed(t, openRedis(t, url), keyring(t, cache.HMACKey{ID: "rogue", Secret: secretNew}), nil)
			ctx := context.Background()
			if err := c.Set(ctx, "scratch:"+key, []byte("forged"), 0); err != nil {
				t.Fatal(err)
			}
			raw.set(t, key, rawRedis{url}.get(t, "scratch:"+key))
		}, cache.FailureUnknownKey},
		{"a genuine value of another key", func(t *testing.T, raw rawStore, key string) {
			raw.set(t, key, raw.get(t, key+":other"))
		}, cache.FailureBadSignature},
	}
	for storeName, open := range stores {
		for _, f := range forgeries {
			t.Run(storeName+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				inner, raw := open(t)
				var reasons []string
				var mu sync.Mutex
				var logs bytes.Buffer
				c, err := cache.NewSigned(inner, keyring(t, cache.HMACKey{ID: "k1", Secret: secretOld}), cache.SignedConfig{
					Logger:    slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil)),
					OnFailure: func(r string) { mu.Lock(); reasons = append(reasons, r); mu.Unlock() },
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx := t.Context()
				key := cache.Key("stage", []byte(t.Name()))
				mustSet(t, c, key, []byte(`{"output":"genuine"}`))
				mustSet(t, c, key+":other", []byte(`{"output":"other"}`))

				f.forge(t, raw, key)
				if v, err := c.Get(ctx, key); !errors.Is(err, cache.ErrMiss) {
					t.Fatalf("Get of a forged entry = (%q, %v), want ErrMiss", v, err)
				}
				if got := c.Failures(); got != 1 {
					t.Errorf("Failures() = %d, want 1", got)
				}
				mu.Lock()
				if len(reasons) != 1 || reasons[0] != f.reason {
					t.Errorf("OnFailure reasons %v, want [%s]", reasons, f.reason)
				}
				if !strings.Contains(logs.String(), "reason="+f.reason) || strings.Contains(logs.String(), key) {
					t.Errorf("log %q: want the reason and a shortened key", logs.String())
				}
				mu.Unlock()

				// The worker computes again and stores; the good value is back.
				mustSet(t, c, key, []byte(`{"output":"recomputed"}`))
				if v, err := c.Get(ctx, key); err != nil || string(v) != `{"output":"recomputed"}` {
					t.Fatalf("Get after the recomputation = (%q, %v)", v, err)
				}
			})
		}
	}
}

// TestSignedRotation: entries signed with an old key id still verify once a
// new key signs, until the old key is dropped.
func TestSignedRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := t.Context()
	oldKey, newKey := cache.HMACKey{ID: "2025", Secret: secretOld}, cache.HMACKey{ID: "2026", Secret: secretNew}
	before := signed(t, openDir(t, dir), keyring(t, oldKey), nil)
	key := cache.Key("stage", []byte("rotation"))
	mustSet(t, before, key, []byte("old"))

	during := signed(t, openDir(t, dir), keyring(t, newKey, oldKey), nil)
	if v, err := during.Get(ctx, key); err != nil || string(v) != "old" {
		t.Fatalf("an old-key entry after rotation: (%q, %v), want a hit", v, err)
	}
	key2 := cache.Key("stage", []byte("rotation 2"))
	mustSet(t, during, key2, []byte("new"))
	if v, err := before.Get(ctx, key2); !errors.Is(err, cache.ErrMiss) {
		t.Errorf("a worker without the new key read its entry: (%q, %v)", v, err)
	}

	after := signed(t, openDir(t, dir), keyring(t, newKey), nil)
	if _, err := after.Get(ctx, key); !errors.Is(err, cache.ErrMiss) {
		t.Errorf("an old-key entry after the old key was dropped: %v, want a miss", err)
	}
	if v, err := after.Get(ctx, key2); err != nil || string(v) != "new" {
		t.Errorf("a new-key entry: (%q, %v)", v, err)
	}
}

func TestParseKeyring(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(secretNew)
	secretish := base64.StdEncoding.EncodeToString([]byte("do-not-print-me-ever-please"))
	k, err := cache.ParseKeyring("new:" + good + ", old:" + base64.StdEncoding.EncodeToString(secretOld) + "\n# a comment\n")
	if err != nil {
		t.Fatal(err)
	}
	if k.SigningID() != "new" || strings.Join(k.IDs(), ",") != "new,old" {
		t.Errorf("ids %v, signing %s", k.IDs(), k.SigningID())
	}
	for _, s := range []string{k.String(), k.GoString(), k.LogValue().String()} {
		if strings.Contains(s, good) {
			t.Errorf("%q shows a secret", s)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"", "no keys"},
		{secretish, "entry 1: not id:base64secret"},
		{"a:" + good + "," + secretish, "entry 2: not id:base64secret"},
		{"a:" + good + ",b:***" + secretish, "entry 2: key b: the secret is not base64"},
		{"a:" + good + ",b:" + base64.StdEncoding.EncodeToString([]byte("short")), "entry 2: key b: the secret is 5 bytes"},
		{"a b:" + good, "entry 1: the key id is not"},
		{"a:" + good + ",a:" + good, "the id a is used twice"},
	} {
		_, err := cache.ParseKeyring(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseKeyring: err = %v, want %q", err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secretish) || strings.Contains(err.Error(), good) {
			t.Errorf("ParseKeyring error %q echoes a secret", err)
		}
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "cache-key")
	var wg sync.WaitGroup
	rings := make([]*cache.Keyring, 4)
	for i := range rings {
		wg.Go(func() {
			k, err := cache.LoadOrCreateKeyFile(path)
			if err != nil {
				t.Error(err)
			}
			rings[i] = k
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, fi.Mode())
	}
	// Every process got the same key: what one signs, the others read.
	ctx := t.Context()
	dir := t.TempDir()
	key := cache.Key("stage", []byte("local"))
	mustSet(t, signed(t, openDir(t, dir), rings[0], nil), key, []byte("v"))
	for _, k := range rings[1:] {
		if _, err := signed(t, openDir(t, dir), k, nil).Get(ctx, key); err != nil {
			t.Errorf("processes disagree on the generated key: %v", err)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.LoadOrCreateKeyFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key file others can read: err = %v, want a refusal", err)
	}
}

func keyring(t *testing.T, keys ...cache.HMACKey) *cache.Keyring {
	t.Helper()
	k, err := cache.NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signed(t *testing.T, inner cache.Cache, keys *cache.Keyring, onFailure func(string)) *cache.Signed {
	t.Helper()
	c, err := cache.NewSigned(inner, keys, cache.SignedConfig{OnFailure: onFailure})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustSet(t *testing.T, c cache.Cache, key string, v []byte) {
	t.Helper()
	if err := c.Set(context.Background(), key, v, 0); err != nil {
		t.Fatal(err)
	}
}

// syncWriter lets a slog handler and the test share a buffer.
type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
