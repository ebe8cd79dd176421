package objects_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/bus/bustest"
	"github.com/autocoder/autocoder/internal/objects"
	"github.com/autocoder/autocoder/pkg/messages"
)

func TestMain(m *testing.M) {
	// nats.go v1.55.0 starts this goroutine on the first async publish (an
	// object store Put) and reads its channel later, unlocked; when the
	// connection closes in between, it reads nil and waits forever. The
	// leak is the library's race, not ours.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// countingStore counts uploads and downloads of the real object store.
type countingStore struct {
	jetstream.ObjectStore
	puts, gets atomic.Int32
	// hold, if set, is called at the start of every download with the
	// object's name (set it before the store is used concurrently).
	hold func(name string)
}

func (s *countingStore) Put(ctx context.Context, meta jetstream.ObjectMeta, r io.Reader) (*jetstream.ObjectInfo, error) {
	s.puts.Add(1)
	return s.ObjectStore.Put(ctx, meta, r)
}

func (s *countingStore) Get(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) (jetstream.ObjectResult, error) {
	s.gets.Add(1)
	if s.hold != nil {
		s.hold(name)
	}
	return s.ObjectStore.Get(ctx, name, opts...)
}

// newStore returns a store over a fresh embedded server's samples bucket,
// the counting wrapper it uses, and the raw bucket.
func newStore(t *testing.T) (*objects.Store, *countingStore, string) {
	t.Helper()
	res := bustest.Start(t, bus.ProvisionConfig{MemoryStorage: true}).Resources
	cs := &countingStore{ObjectStore: res.Samples}
	dir := filepath.Join(t.TempDir(), "samples")
	st, err := objects.New(cs, dir)
	if err != nil {
		t.Fatal(err)
	}
	return st, cs, dir
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sha(body string) string {
	s := sha256.Sum256([]byte(body))
	return hex.EncodeToString(s[:])
}

const csv = "a,b\n1,2\n3,4\n"

func TestPutIsIdempotentByContent(t *testing.T) {
	t.Parallel()
	st, cs, _ := newStore(t)
	ref, err := st.Put(ctxT(t), "sales", writeFile(t, "orders.csv", csv))
	if err != nil {
		t.Fatal(err)
	}
	want := messages.SampleRef{Name: "sales", Object: "sha256:" + sha(csv) + ".csv", FileName: "sales.csv", Size: int64(len(csv))}
	if diff := cmp.Diff(want, ref); diff != "" {
		t.Errorf("ref (-want +got):\n%s", diff)
	}
	info, err := cs.GetInfo(ctxT(t), "sha256-"+sha(csv))
	if err != nil {
		t.Fatalf("object not uploaded: %v", err)
	}

	// The same bytes from another file, under another name: nothing new is uploaded.
	again, err := st.Put(ctxT(t), "other", writeFile(t, "copy.csv", csv))
	if err != nil {
		t.Fatal(err)
	}
	if again.Object != ref.Object || again.FileName != "other.csv" {
		t.Errorf("second ref %+v", again)
	}
	if n := cs.puts.Load(); n != 1 {
		t.Errorf("%d uploads, want 1", n)
	}
	info2, err := cs.GetInfo(ctxT(t), "sha256-"+sha(csv))
	if err != nil {
		t.Fatal(err)
	}
	if info2.NUID != info.NUID {
		t.Error("the object was replaced by the second Put")
	}

	// Other bytes are another object.
	if _, err := st.Put(ctxT(t), "sales", writeFile(t, "orders.csv", csv+"5,6\n")); err != nil {
		t.Fatal(err)
	}
	if n := cs.puts.Load(); n != 2 {
		t.Errorf("%d uploads after new content, want 2", n)
	}
}

func TestPutExtensions(t *testing.T) {
	t.Parallel()
	st, _, _ := newStore(t)
	tests := map[string]string{ // file name -> FileName of a sample named "s"
		"data.parquet":                    "s.parquet",
		"data.tar.gz":                     "s.gz",
		"noext":                           "s",
		"weird.c$v":                       "s",
		"long." + strings.Repeat("x", 17): "s",
	}
	for name, want := range tests {
		ref, err := st.Put(ctxT(t), "s", writeFile(t, name, "x"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ref.FileName != want {
			t.Errorf("%s: file name %q, want %q", name, ref.FileName, want)
		}
		if _, ok := messages.ParseObjectRef(ref.Object); !ok {
			t.Errorf("%s: %q is not an object reference", name, ref.Object)
		}
	}
	if _, err := st.Put(ctxT(t), "s", filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Error("Put of a missing file worked")
	}
}

func TestFetchDownloadsOnceAndCaches(t *testing.T) {
	t.Parallel()
	st, cs, dir := newStore(t)
	ref, err := st.Put(ctxT(t), "sales", writeFile(t, "orders.csv", csv))
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.Fetch(ctxT(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != csv {
		t.Errorf("fetched %q (%v)", b, err)
	}
	if filepath.Dir(p) != dir {
		t.Errorf("fetched to %s, outside the cache dir %s", p, dir)
	}
	if _, err := st.Fetch(ctxT(t), ref); err != nil {
		t.Fatal(err)
	}
	if n := cs.gets.Load(); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}
	// Another Store on the same dir (another worker process) finds it too.
	st2, err := objects.New(cs, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st2.Fetch(ctxT(t), ref); err != nil {
		t.Fatal(err)
	}
	if n := cs.gets.Load(); n != 1 {
		t.Errorf("%d downloads after a second store on the same dir, want 1", n)
	}
}

func TestConcurrentFetchDownloadsOnce(t *testing.T) {
	t.Parallel()
	st, cs, _ := newStore(t)
	ref, err := st.Put(ctxT(t), "sales", writeFile(t, "orders.csv", csv))
	if err != nil {
		t.Fatal(err)
	}
	entered, gate := make(chan struct{}, 8), make(chan struct{})
	cs.hold = func(string) {
		entered <- struct{}{}
		<-gate
	}
	const n = 8
	var wg sync.WaitGroup
	paths := make([]string, n)
	errs := make([]error, n)
	ctx := ctxT(t)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = st.Fetch(ctx, ref)
		}()
	}
	<-entered   // one download is under way; the other fetches wait for it
	close(gate) // (or have not started yet, and then find the file)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || paths[i] != paths[0] {
			t.Errorf("fetch %d: %q, %v", i, paths[i], errs[i])
		}
	}
	if got := cs.gets.Load(); got != 1 {
		t.Errorf("%d downloads for %d concurrent fetches, want 1", got, n)
	}
}

// TestFetchOfDifferentObjectsIsNotSerialised: a slow download of one
// sample does not hold up the download of another.
func TestFetchOfDifferentObjectsIsNotSerialised(t *testing.T) {
	t.Parallel()
	st, cs, _ := newStore(t)
	slow, err := st.Put(ctxT(t), "slow", writeFile(t, "slow.csv", csv))
	if err != nil {
		t.Fatal(err)
	}
	fast, err := st.Put(ctxT(t), "fast", writeFile(t, "fast.csv", csv+"9,9\n"))
	if err != nil {
		t.Fatal(err)
	}
	slowName := "sha256-" + sha(csv)
	entered, gate := make(chan struct{}), make(chan struct{})
	cs.hold = func(name string) {
		if name == slowName {
			close(entered)
			<-gate
		}
	}
	ctx := ctxT(t)
	slowDone := make(chan error, 1)
	go func() {
		_, err := st.Fetch(ctx, slow)
		slowDone <- err
	}()
	<-entered
	fastDone := make(chan error, 1)
	go func() {
		_, err := st.Fetch(ctx, fast)
		fastDone <- err
	}()
	select {
	case err := <-fastDone:
		if err != nil {
			t.Errorf("fast fetch: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the fetch of one sample waited for the download of another")
	}
	close(gate)
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	select {
	case <-fastDone:
	default:
	}
}

// TestFetchVerifiesTheHash: an object whose bytes do not match its name
// (corruption, or a bad upload) is refused and not cached.
func TestFetchVerifiesTheHash(t *testing.T) {
	t.Parallel()
	st, cs, dir := newStore(t)
	name := "sha256-" + sha(csv)
	if _, err := cs.ObjectStore.PutBytes(ctxT(t), name, []byte("tampered")); err != nil {
		t.Fatal(err)
	}
	ref := messages.SampleRef{Name: "sales", Object: "sha256:" + sha(csv) + ".csv", FileName: "sales.csv"}
	_, err := st.Fetch(ctxT(t), ref)
	if err == nil || !strings.Contains(err.Error(), "does not match") || !errors.Is(err, objects.ErrBadObject) {
		t.Fatalf("Fetch = %v, want a hash mismatch marked ErrBadObject", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("a mismatched download was left in the cache: %v", entries)
	}
	// The next Fetch tries again rather than trusting anything on disk.
	if _, err := st.Fetch(ctxT(t), ref); err == nil {
		t.Error("second Fetch of a bad object worked")
	}
}

func TestFetchErrors(t *testing.T) {
	t.Parallel()
	st, _, _ := newStore(t)
	if _, err := st.Fetch(ctxT(t), messages.SampleRef{Name: "s", Object: "/etc/passwd"}); err == nil {
		t.Error("Fetch of a path worked")
	}
	_, err := st.Fetch(ctxT(t), messages.SampleRef{Name: "s", Object: "sha256:" + sha("nothing here"), FileName: "s"})
	if !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Errorf("Fetch of a missing object = %v, want ErrObjectNotFound", err)
	}
}

func TestFetchAll(t *testing.T) {
	t.Parallel()
	st, cs, _ := newStore(t)
	a, err := st.Put(ctxT(t), "a", writeFile(t, "a.csv", csv))
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Put(ctxT(t), "b", writeFile(t, "b.json", `{"x": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.FetchAll(ctxT(t), []messages.SampleRef{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a.csv"] == "" || got["b.json"] == "" {
		t.Errorf("FetchAll = %v", got)
	}
	if empty, err := st.FetchAll(ctxT(t), nil); err != nil || len(empty) != 0 {
		t.Errorf("FetchAll(nil) = %v, %v", empty, err)
	}

	before := cs.gets.Load()
	for _, bad := range []string{"", "../etc/passwd", "a/b.csv", `a\b.csv`, ".hidden", "..", "."} {
		r := a
		r.FileName = bad
		if _, err := st.FetchAll(ctxT(t), []messages.SampleRef{r}); err == nil || !strings.Contains(err.Error(), "bad file name") || !errors.Is(err, objects.ErrBadObject) {
			t.Errorf("FetchAll with file name %q = %v, want bad file name", bad, err)
		}
	}
	fresh := messages.SampleRef{Name: "c", Object: "sha256:" + sha("never uploaded"), FileName: "../c"}
	if _, err := st.FetchAll(ctxT(t), []messages.SampleRef{fresh}); err == nil || !strings.Contains(err.Error(), "bad file name") {
		t.Errorf("FetchAll = %v, want the file name refused before any download", err)
	}
	if n := cs.gets.Load() - before; n != 0 {
		t.Errorf("bad file names caused %d downloads", n)
	}
}

// TestFetchMaxChecksSizeFirst: an object over the fetch's bound is refused
// from the store's size of it, before a byte is downloaded; within the
// bound it is fetched, and a cached copy is held to the bound too.
func TestFetchMaxChecksSizeFirst(t *testing.T) {
	t.Parallel()
	st, cs, _ := newStore(t)
	ref, err := st.Put(ctxT(t), "docs", writeFile(t, "bundle.json", csv))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.FetchMax(ctxT(t), ref, int64(len(csv)-1))
	if !errors.Is(err, objects.ErrTooLarge) || !errors.Is(err, objects.ErrBadObject) {
		t.Errorf("FetchMax under the size = %v, want ErrTooLarge", err)
	}
	if n := cs.gets.Load(); n != 0 {
		t.Errorf("%d downloads of an object over the bound, want none", n)
	}
	if _, err := st.FetchMax(ctxT(t), ref, int64(len(csv))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FetchMax(ctxT(t), ref, 4); !errors.Is(err, objects.ErrTooLarge) {
		t.Errorf("FetchMax of a cached object over the bound = %v, want ErrTooLarge", err)
	}
}
