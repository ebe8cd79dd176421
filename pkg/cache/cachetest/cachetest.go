package cachetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/pkg/cache"
)

const (
	// shortTTL is the ttl of entries and locks that a test waits out. Tests
	// never assume it has not yet passed: on a loaded machine it may have.
	shortTTL = 40 * time.Millisecond
	// longTTL is a ttl no test outlives.
	longTTL = 5 * time.Minute
	// waitFor bounds every wait for something to expire.
	waitFor = 10 * time.Second
	// largeValueSize is well past any single buffer or packet size.
	largeValueSize = 32 << 20
)

// Run runs the conformance suite against the caches newCache returns.
//
// newCache is called once per subtest, from parallel subtests, and may return
// caches sharing one backend (one Redis server, one directory): the suite uses
// fresh random keys and lock names in every subtest. Run closes every cache it
// gets, after the subtest and before newCache's own t.Cleanup functions run,
// and may close one twice.
//
// Beyond the Cache interface's comments, the suite pins down: an empty value
// is a hit, not a miss; Set copies its value and Get returns a copy; Set with
// ttl 0 clears an older ttl; a negative Set ttl or a non-positive lock ttl is
// an error; a done context makes every method fail with an error wrapping
// ctx.Err() and change nothing; every method fails after Close.
func Run(t *testing.T, newCache func(t *testing.T) cache.Cache) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, c cache.Cache)
	}{
		{"GetMissing", testGetMissing},
		{"SetGet", testSetGet},
		{"Overwrite", testOverwrite},
		{"Delete", testDelete},
		{"DeleteMissing", testDeleteMissing},
		{"EmptyValue", testEmptyValue},
		{"BinaryValue", testBinaryValue},
		{"LargeValue", testLargeValue},
		{"OversizedValue", testOversizedValue},
		{"KeysAreIndependent", testKeysAreIndependent},
		{"ValuesAreCopied", testValuesAreCopied},
		{"TTLExpires", testTTLExpires},
		{"ZeroTTLDoesNotExpire", testZeroTTLDoesNotExpire},
		{"SetReplacesTTL", testSetReplacesTTL},
		{"InvalidTTL", testInvalidTTL},
		{"HugeTTL", testHugeTTL},
		{"ConcurrentSetGet", testConcurrentSetGet},
		{"LockExclusive", testLockExclusive},
		{"LockUnlockRelock", testLockUnlockRelock},
		{"UnlockWrongToken", testUnlockWrongToken},
		{"UnlockNotHeld", testUnlockNotHeld},
		{"LockExpires", testLockExpires},
		{"LocksAreIndependent", testLocksAreIndependent},
		{"LockSerializesUpdates", testLockSerializesUpdates},
		{"CanceledContext", testCanceledContext},
		{"Close", testClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			t.Cleanup(func() { _ = c.Close() })
			tt.fn(t, c)
		})
	}
}

func testGetMissing(t *testing.T, c cache.Cache) {
	_, err := c.Get(t.Context(), newKey(t))
	if !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Get of a key never set: err = %v, want ErrMiss", err)
	}
}

func testSetGet(t *testing.T, c cache.Cache) {
	k := newKey(t)
	mustSet(t, c, k, []byte("hello"), 0)
	wantValue(t, c, k, []byte("hello"))
}

func testOverwrite(t *testing.T, c cache.Cache) {
	k := newKey(t)
	mustSet(t, c, k, []byte("first, and longer than the second"), 0)
	mustSet(t, c, k, []byte("second"), 0)
	wantValue(t, c, k, []byte("second"))
}

func testDelete(t *testing.T, c cache.Cache) {
	k := newKey(t)
	mustSet(t, c, k, []byte("v"), 0)
	if err := c.Delete(t.Context(), k); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantMiss(t, c, k)
	// A deleted key can be set again.
	mustSet(t, c, k, []byte("again"), 0)
	wantValue(t, c, k, []byte("again"))
}

func testDeleteMissing(t *testing.T, c cache.Cache) {
	if err := c.Delete(t.Context(), newKey(t)); err != nil {
		t.Fatalf("Delete of a key never set: %v, want nil", err)
	}
}

func testEmptyValue(t *testing.T, c cache.Cache) {
	k := newKey(t)
	mustSet(t, c, k, []byte{}, 0)
	got, err := c.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("Get of an empty value: %v, want a hit", err)
	}
	if len(got) != 0 {
		t.Fatalf("Get of an empty value = %q, want empty", got)
	}
}

func testBinaryValue(t *testing.T, c cache.Cache) {
	v := make([]byte, 0, 3*256)
	for range 3 {
		for b := range 256 {
			v = append(v, byte(b))
		}
	}
	// Invalid UTF-8, NULs and CR/LF are the usual suspects for a text-minded
	// encoding layer; all of them are in v.
	k := newKey(t)
	mustSet(t, c, k, v, 0)
	wantValue(t, c, k, v)
}

func testLargeValue(t *testing.T, c cache.Cache) {
	v := randomBytes(t, largeValueSize)
	k := newKey(t)
	mustSet(t, c, k, v, 0)
	wantValue(t, c, k, v)
}

// testOversizedValue: a value over MaxValueBytes is refused, not stored.
func testOversizedValue(t *testing.T, c cache.Cache) {
	k := newKey(t)
	if err := c.Set(t.Context(), k, make([]byte, cache.MaxValueBytes+1), 0); err == nil {
		t.Fatal("Set of a value over MaxValueBytes succeeded")
	}
	if _, err := c.Get(t.Context(), k); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Get after a refused Set: err = %v, want ErrMiss", err)
	}
}

func testKeysAreIndependent(t *testing.T, c cache.Cache) {
	base := newKey(t)
	// Keys normally come from cache.Key, but the interface takes any string:
	// none of these may collide or escape the cache's namespace.
	keys := []string{
		base,
		base + "x",
		base + "/../" + base,
		base + ":a:b",
		base + " spaced",
		base + "\x00nul",
		base + "ünïcødé",
		base + string(bytes.Repeat([]byte("long"), 2000)),
		cache.Key("cachetest", []byte(base), []byte("c")),
		cache.Key("cachetest", []byte(base+"c")),
	}
	for i, k := range keys {
		mustSet(t, c, k, []byte(strconv.Itoa(i)), 0)
	}
	for i, k := range keys {
		wantValue(t, c, k, []byte(strconv.Itoa(i)))
	}
}

func testValuesAreCopied(t *testing.T, c cache.Cache) {
	k := newKey(t)
	v := []byte("original")
	mustSet(t, c, k, v, 0)
	copy(v, "MUTATED!")
	got := wantValue(t, c, k, []byte("original"))
	copy(got, "MUTATED!")
	wantValue(t, c, k, []byte("original"))
}

func testTTLExpires(t *testing.T, c cache.Cache) {
	k := newKey(t)
	start := time.Now()
	mustSet(t, c, k, []byte("v"), shortTTL)
	got, err := c.Get(t.Context(), k)
	switch {
	case errors.Is(err, cache.ErrMiss):
		if elapsed := time.Since(start); elapsed < shortTTL {
			t.Fatalf("entry with ttl %v missing after %v", shortTTL, elapsed)
		}
	case err != nil:
		t.Fatalf("Get: %v", err)
	case !bytes.Equal(got, []byte("v")):
		t.Fatalf("Get = %q, want %q", got, "v")
	}
	waitMiss(t, c, k)
}

func testZeroTTLDoesNotExpire(t *testing.T, c cache.Cache) {
	forever, brief := newKey(t), newKey(t)
	mustSet(t, c, forever, []byte("v"), 0)
	mustSet(t, c, brief, []byte("v"), shortTTL)
	// Once an entry set later with a ttl has expired, the ttl clock has
	// certainly run past where a zero ttl could have been misread.
	waitMiss(t, c, brief)
	wantValue(t, c, forever, []byte("v"))
}

func testSetReplacesTTL(t *testing.T, c cache.Cache) {
	k, marker := newKey(t), newKey(t)
	mustSet(t, c, k, []byte("old"), shortTTL)
	mustSet(t, c, k, []byte("new"), 0)
	mustSet(t, c, marker, []byte("v"), shortTTL)
	waitMiss(t, c, marker)
	wantValue(t, c, k, []byte("new"))
}

func testInvalidTTL(t *testing.T, c cache.Cache) {
	ctx := t.Context()
	k := newKey(t)
	if err := c.Set(ctx, k, []byte("v"), -time.Second); err == nil {
		t.Errorf("Set with a negative ttl: err = nil, want an error")
	}
	wantMiss(t, c, k)
	name := newLockName(t)
	for _, ttl := range []time.Duration{0, -time.Second} {
		if tok, err := c.TryLock(ctx, name, ttl); err == nil || errors.Is(err, cache.ErrLockHeld) {
			t.Errorf("TryLock with ttl %v = (%q, %v), want an error other than ErrLockHeld", ttl, tok, err)
		}
	}
	// The rejected calls took nothing.
	mustLock(t, c, name, longTTL)
}

// testHugeTTL checks that the longest ttl is "about never": deadline arithmetic
// must not overflow into "already expired".
func testHugeTTL(t *testing.T, c cache.Cache) {
	const huge = time.Duration(math.MaxInt64)
	k, name := newKey(t), newLockName(t)
	mustSet(t, c, k, []byte("v"), huge)
	wantValue(t, c, k, []byte("v"))
	mustLock(t, c, name, huge)
	wantLockHeld(t, c, name)
}

// testConcurrentSetGet has goroutines overwrite a few keys with values of
// varied sizes while others read them: every read must be a miss or one whole
// value that some writer wrote, never a mix.
func testConcurrentSetGet(t *testing.T, c cache.Cache) {
	const (
		goroutines = 8
		iterations = 60
		numKeys    = 3
	)
	keys := make([]string, numKeys)
	for i := range keys {
		keys[i] = newKey(t)
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range iterations {
				k := keys[(g+i)%numKeys]
				if (g+i)%2 == 0 {
					// Sizes from empty to a few hundred KiB, so a torn write
					// would show as a wrong length or a wrong checksum.
					size := (g*iterations + i) * 997 % (300 << 10)
					if err := c.Set(ctx, k, sealed(g, i, size), 0); err != nil {
						t.Errorf("Set: %v", err)
						return
					}
					continue
				}
				got, err := c.Get(ctx, k)
				if errors.Is(err, cache.ErrMiss) {
					continue
				}
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				if err := checkSealed(got); err != nil {
					t.Errorf("Get %s returned a value no writer wrote: %v", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func testLockExclusive(t *testing.T, c cache.Cache) {
	const goroutines = 16
	name := newLockName(t)
	ctx := t.Context()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
	)
	start := make(chan struct{})
	for range goroutines {
		wg.Go(func() {
			<-start
			tok, err := c.TryLock(ctx, name, longTTL)
			if errors.Is(err, cache.ErrLockHeld) {
				return
			}
			if err != nil {
				t.Errorf("TryLock: %v", err)
				return
			}
			if tok == "" {
				t.Errorf("TryLock returned an empty token")
			}
			mu.Lock()
			winners = append(winners, tok)
			mu.Unlock()
		})
	}
	close(start) // all at once, for the most contention
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d goroutines raced for the lock and %d won, want exactly 1", goroutines, len(winners))
	}
}

func testLockUnlockRelock(t *testing.T, c cache.Cache) {
	name := newLockName(t)
	tok1 := mustLock(t, c, name, longTTL)
	wantLockHeld(t, c, name)
	mustUnlock(t, c, name, tok1)
	tok2 := mustLock(t, c, name, longTTL)
	if tok2 == tok1 {
		t.Fatalf("a new lock got the old token %q; tokens must be unique", tok1)
	}
}

func testUnlockWrongToken(t *testing.T, c cache.Cache) {
	name := newLockName(t)
	tok := mustLock(t, c, name, longTTL)
	mustUnlock(t, c, name, "not-the-token")
	mustUnlock(t, c, name, "")
	wantLockHeld(t, c, name)
	mustUnlock(t, c, name, tok)
	mustLock(t, c, name, longTTL)
}

func testUnlockNotHeld(t *testing.T, c cache.Cache) {
	name := newLockName(t)
	mustUnlock(t, c, name, "never-issued")
	mustLock(t, c, name, longTTL)
}

func testLockExpires(t *testing.T, c cache.Cache) {
	ctx := t.Context()
	name := newLockName(t)
	start := time.Now()
	old := mustLock(t, c, name, shortTTL)
	if _, err := c.TryLock(ctx, name, longTTL); err == nil {
		if elapsed := time.Since(start); elapsed < shortTTL {
			t.Fatalf("lock with ttl %v taken again after %v", shortTTL, elapsed)
		}
	} else if !errors.Is(err, cache.ErrLockHeld) {
		t.Fatalf("TryLock: %v", err)
	}

	// Poll until the expired lock can be taken (or was, above).
	var cur string
	deadline := time.Now().Add(waitFor)
	for cur == "" {
		tok, err := c.TryLock(ctx, name, longTTL)
		switch {
		case err == nil:
			cur = tok
		case !errors.Is(err, cache.ErrLockHeld):
			t.Fatalf("TryLock: %v", err)
		case time.Now().After(deadline):
			t.Fatalf("lock with ttl %v still held after %v", shortTTL, waitFor)
		default:
			time.Sleep(5 * time.Millisecond)
		}
	}
	if cur == old {
		t.Fatalf("re-taken lock has the expired holder's token")
	}
	// The late holder's Unlock must not free the lock under the new one.
	mustUnlock(t, c, name, old)
	wantLockHeld(t, c, name)
	mustUnlock(t, c, name, cur)
	mustLock(t, c, name, longTTL)
}

func testLocksAreIndependent(t *testing.T, c cache.Cache) {
	a, b := newLockName(t), newLockName(t)
	tokA := mustLock(t, c, a, longTTL)
	tokB := mustLock(t, c, b, longTTL)
	mustUnlock(t, c, a, tokB) // b's token does not open a
	wantLockHeld(t, c, a)
	// Locks and values live apart, even under the same string.
	mustSet(t, c, a, []byte("value"), 0)
	wantValue(t, c, a, []byte("value"))
	if err := c.Delete(t.Context(), a); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantLockHeld(t, c, a)
	mustUnlock(t, c, a, tokA)
	wantMiss(t, c, a)
}

// testLockSerializesUpdates increments a counter with read-modify-write under
// the lock from many goroutines: a lost update means two held the lock at once.
func testLockSerializesUpdates(t *testing.T, c cache.Cache) {
	const (
		goroutines = 6
		increments = 15
	)
	ctx := t.Context()
	name, k := newLockName(t), newKey(t)
	mustSet(t, c, k, []byte("0"), 0)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range increments {
				if err := increment(ctx, c, name, k); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wantValue(t, c, k, []byte(strconv.Itoa(goroutines*increments)))
}

// increment adds one to the decimal counter at key, holding the named lock
// while it reads and writes, and waiting for the lock as long as ctx allows.
func increment(ctx context.Context, c cache.Cache, lockName, key string) error {
	for {
		tok, err := c.TryLock(ctx, lockName, longTTL)
		if errors.Is(err, cache.ErrLockHeld) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("wait for lock %s: %w", lockName, ctx.Err())
			case <-time.After(time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		err = func() error {
			v, err := c.Get(ctx, key)
			if err != nil {
				return fmt.Errorf("read counter: %w", err)
			}
			n, err := strconv.Atoi(string(v))
			if err != nil {
				return fmt.Errorf("counter %q: %w", v, err)
			}
			return c.Set(ctx, key, []byte(strconv.Itoa(n+1)), 0)
		}()
		// Unlock even if ctx ended meanwhile, or others wait out the ttl.
		return errors.Join(err, c.Unlock(context.WithoutCancel(ctx), lockName, tok))
	}
}

func testCanceledContext(t *testing.T, c cache.Cache) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	k, name := newKey(t), newLockName(t)

	if _, err := c.Get(ctx, k); !errors.Is(err, context.Canceled) {
		t.Errorf("Get: err = %v, want context.Canceled", err)
	}
	if err := c.Set(ctx, k, []byte("v"), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Set: err = %v, want context.Canceled", err)
	}
	wantMiss(t, c, k) // a canceled Set stored nothing
	if tok, err := c.TryLock(ctx, name, longTTL); !errors.Is(err, context.Canceled) {
		t.Errorf("TryLock = (%q, %v), want context.Canceled", tok, err)
	}
	tok := mustLock(t, c, name, longTTL) // a canceled TryLock took nothing

	mustSet(t, c, k, []byte("v"), 0)
	if err := c.Delete(ctx, k); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete: err = %v, want context.Canceled", err)
	}
	wantValue(t, c, k, []byte("v"))
	if err := c.Unlock(ctx, name, tok); !errors.Is(err, context.Canceled) {
		t.Errorf("Unlock: err = %v, want context.Canceled", err)
	}
	wantLockHeld(t, c, name)
}

func testClose(t *testing.T, c cache.Cache) {
	ctx := t.Context()
	k, name := newKey(t), newLockName(t)
	mustSet(t, c, k, []byte("v"), 0)
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	fail := func(op string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, cache.ErrMiss) || errors.Is(err, cache.ErrLockHeld) {
			t.Errorf("%s after Close: err = %v, want a plain error", op, err)
		}
	}
	_, err := c.Get(ctx, k)
	fail("Get", err)
	fail("Set", c.Set(ctx, k, []byte("v"), 0))
	fail("Delete", c.Delete(ctx, k))
	_, err = c.TryLock(ctx, name, longTTL)
	fail("TryLock", err)
	fail("Unlock", c.Unlock(ctx, name, "x"))
	_ = c.Close() // a second Close must not panic; Run's cleanup closes again too
}

// newKey returns a key no other test, run or process uses.
func newKey(t *testing.T) string {
	return cache.Key("cachetest", []byte(t.Name()), randomBytes(t, 16))
}

// newLockName returns a lock name no other test, run or process uses.
func newLockName(t *testing.T) string {
	return "cachetest/" + t.Name() + "/" + hex.EncodeToString(randomBytes(t, 8))
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// sealed returns a value of size+header bytes that carries its own checksum.
func sealed(writer, iteration, size int) []byte {
	body := bytes.Repeat([]byte{byte(writer), byte(iteration)}, size/2+1)[:size]
	sum := sha256.Sum256(body)
	return append(sum[:], body...)
}

func checkSealed(v []byte) error {
	if len(v) < sha256.Size {
		return fmt.Errorf("%d bytes, shorter than the checksum", len(v))
	}
	if sum := sha256.Sum256(v[sha256.Size:]); !bytes.Equal(sum[:], v[:sha256.Size]) {
		return fmt.Errorf("checksum mismatch over %d bytes", len(v))
	}
	return nil
}

func mustSet(t *testing.T, c cache.Cache, key string, v []byte, ttl time.Duration) {
	t.Helper()
	if err := c.Set(t.Context(), key, v, ttl); err != nil {
		t.Fatalf("Set(%s, %d bytes, %v): %v", key, len(v), ttl, err)
	}
}

func wantValue(t *testing.T, c cache.Cache, key string, want []byte) []byte {
	t.Helper()
	got, err := c.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s) = %s, want %s", key, describe(got), describe(want))
	}
	return got
}

func wantMiss(t *testing.T, c cache.Cache, key string) {
	t.Helper()
	if got, err := c.Get(t.Context(), key); !errors.Is(err, cache.ErrMiss) {
		t.Fatalf("Get(%s) = (%s, %v), want ErrMiss", key, describe(got), err)
	}
}

// waitMiss polls until key has expired.
func waitMiss(t *testing.T, c cache.Cache, key string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		_, err := c.Get(t.Context(), key)
		if errors.Is(err, cache.ErrMiss) {
			return
		}
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Get(%s) still hits %v after it was set with ttl %v", key, waitFor, shortTTL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustLock(t *testing.T, c cache.Cache, name string, ttl time.Duration) string {
	t.Helper()
	tok, err := c.TryLock(t.Context(), name, ttl)
	if err != nil {
		t.Fatalf("TryLock(%s): %v", name, err)
	}
	if tok == "" {
		t.Fatalf("TryLock(%s) returned an empty token", name)
	}
	return tok
}

func mustUnlock(t *testing.T, c cache.Cache, name, token string) {
	t.Helper()
	if err := c.Unlock(t.Context(), name, token); err != nil {
		t.Fatalf("Unlock(%s, %q): %v", name, token, err)
	}
}

func wantLockHeld(t *testing.T, c cache.Cache, name string) {
	t.Helper()
	if tok, err := c.TryLock(t.Context(), name, longTTL); !errors.Is(err, cache.ErrLockHeld) {
		t.Fatalf("TryLock(%s) = (%q, %v), want ErrLockHeld", name, tok, err)
	}
}

// describe prints a value short enough for a failure message.
func describe(v []byte) string {
	if len(v) <= 64 {
		return strconv.Quote(string(v))
	}
	return fmt.Sprintf("%d bytes %q...", len(v), v[:32])
}
