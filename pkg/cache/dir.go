package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var _ Cache = (*Dir)(nil)

// Entry file format: a fixed header, then the value.
//
//	magic   4 bytes  "acv1"
//	expiry  8 bytes  big-endian Unix nanoseconds, 0 for no expiry
//	length  8 bytes  big-endian length of the value
//	crc     4 bytes  CRC-32C of the value
//
// Rename makes a write all-or-nothing for readers, but after a machine crash a
// renamed file may still be short or hold garbage (data not yet on disk);
// length and checksum turn that into a miss instead of a wrong result, without
// paying an fsync on every Set.
const (
	entryMagic     = "acv1"
	entryHeaderLen = 4 + 8 + 8 + 4
)

// staleTempAge is how old a file in tmp/ must be before OpenDir removes it:
// old enough that no live writer can still be using it.
const staleTempAge = time.Hour

// Dir is a Cache kept in a directory, for one machine. Several processes may
// open the same directory: values are published by rename, so a reader sees a
// whole old value, a whole new one, or a miss; locks are files guarded by
// flock(2), which the kernel releases if a process dies.
//
// Expiry uses the wall clock, because it must mean the same thing to every
// process sharing the directory. An expired entry is removed when it is
// next read, and, since a content-addressed key seldom is, by a sweep of
// the whole directory (RemoveExpired), which its owner runs in the
// background (SweepEvery): the workers do, every SweepInterval.
type Dir struct {
	root      string
	now       func() time.Time // the clock for TTLs and lock expiry; tests replace it
	closed    atomic.Bool
	done      chan struct{} // closed by Close: the sweeps stop
	closeOnce sync.Once
}

// SweepInterval is how often the workers' Dir removes the entries that
// expired unread.
const SweepInterval = 6 * time.Hour

// OpenDir opens (creating if needed) a Dir cache rooted at dir.
func OpenDir(dir string) (*Dir, error) { return openDir(dir, time.Now) }

// openDir is OpenDir on the clock now.
func openDir(dir string, now func() time.Time) (*Dir, error) {
	if dir == "" {
		return nil, errors.New("cache: open dir: empty path")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: open dir %s: %w", dir, err)
	}
	for _, sub := range []string{dirData, dirLocks, dirTmp} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o700); err != nil {
			return nil, fmt.Errorf("cache: open dir %s: %w", dir, err)
		}
	}
	d := &Dir{root: root, now: now, done: make(chan struct{})}
	d.removeStaleTemps()
	return d, nil
}

// SweepEvery runs RemoveExpired at once and then every interval, until
// the cache is closed.
func (d *Dir) SweepEvery(every time.Duration) {
	for {
		d.RemoveExpired()
		select {
		case <-d.done:
			return
		case <-time.After(every):
		}
	}
}

// RemoveExpired removes the entries whose ttl has passed, and any that is
// damaged, and returns how many it removed. It stops early once the cache
// is closed.
func (d *Dir) RemoveExpired() int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(d.root, dirData), func(path string, e fs.DirEntry, err error) error {
		if d.closed.Load() {
			return filepath.SkipAll
		}
		if err == nil && e.Type().IsRegular() && d.removeIfExpired(path) {
			n++
		}
		return nil // best effort: an unreadable part is left for the next sweep
	})
	return n
}

// removeIfExpired removes the entry at path if its header says it expired,
// or is not a whole header.
func (d *Dir) removeIfExpired(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	var hdr [entryHeaderLen]byte
	if _, err := io.ReadFull(f, hdr[:]); err == nil && string(hdr[:4]) == entryMagic {
		expiry := int64(binary.BigEndian.Uint64(hdr[4:12]))
		if expiry == 0 || d.now().UnixNano() < expiry {
			return false
		}
	} else if d.now().Sub(fi.ModTime()) < staleTempAge {
		return false // a damaged entry may be a write landing: Get discards it
	}
	d.discard(path, fi)
	return true
}

// Get implements Cache.
func (d *Dir) Get(ctx context.Context, key string) ([]byte, error) {
	if err := d.check(ctx, "get"); err != nil {
		return nil, err
	}
	path := dirEntryPath(d.root, key)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrMiss
	}
	if err != nil {
		return nil, fmt.Errorf("cache: dir get: %w", err)
	}
	defer f.Close()

	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cache: dir get: %w", err)
	}
	var hdr [entryHeaderLen]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		d.discard(path, fi)
		return nil, ErrMiss
	}
	expiry := int64(binary.BigEndian.Uint64(hdr[4:12]))
	length := binary.BigEndian.Uint64(hdr[12:20])
	sum := binary.BigEndian.Uint32(hdr[20:24])
	// Checking length against the file size first also bounds the allocation
	// below by what is really on disk.
	if string(hdr[:4]) != entryMagic || length != uint64(fi.Size()-entryHeaderLen) || length > MaxValueBytes {
		d.discard(path, fi)
		return nil, ErrMiss
	}
	if expiry != 0 && d.now().UnixNano() >= expiry {
		d.discard(path, fi)
		return nil, ErrMiss
	}
	value := make([]byte, length)
	if _, err := io.ReadFull(f, value); err != nil {
		return nil, fmt.Errorf("cache: dir get: %w", err)
	}
	if entryChecksum(value) != sum {
		d.discard(path, fi)
		return nil, ErrMiss
	}
	return value, nil
}

// Set implements Cache.
func (d *Dir) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkSetTTL(ttl); err != nil {
		return err
	}
	if err := checkValue(value); err != nil {
		return err
	}
	if err := d.check(ctx, "set"); err != nil {
		return err
	}
	var expiry int64
	if ttl > 0 {
		expiry = expiryAt(d.now().UnixNano(), ttl)
	}
	var hdr [entryHeaderLen]byte
	copy(hdr[:4], entryMagic)
	binary.BigEndian.PutUint64(hdr[4:12], uint64(expiry))
	binary.BigEndian.PutUint64(hdr[12:20], uint64(len(value)))
	binary.BigEndian.PutUint32(hdr[20:24], entryChecksum(value))

	path := dirEntryPath(d.root, key)
	if err := d.publish(ctx, path, hdr[:], value); err != nil {
		return fmt.Errorf("cache: dir set: %w", err)
	}
	return nil
}

// publish writes header and value to a temporary file and renames it to path,
// so that no reader, in this process or another, sees a partial value.
func (d *Dir) publish(ctx context.Context, path string, header, value []byte) (err error) {
	// Recreated on demand: someone may have emptied the cache directory under
	// a running process, which should cost misses, not errors.
	tmpDir := dirTmpPath(d.root)
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(tmpDir, "set-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(header); err != nil {
		return err
	}
	if _, err := f.Write(value); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// A large write may have outlived the caller's interest; do not publish
	// for a caller that has given up.
	if err := ctx.Err(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Delete implements Cache.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := d.check(ctx, "delete"); err != nil {
		return err
	}
	err := os.Remove(dirEntryPath(d.root, key))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cache: dir delete: %w", err)
	}
	return nil
}

// TryLock implements Cache.
func (d *Dir) TryLock(ctx context.Context, name string, ttl time.Duration) (string, error) {
	if err := checkLockTTL(ttl); err != nil {
		return "", err
	}
	if err := d.check(ctx, "lock"); err != nil {
		return "", err
	}
	token, err := newToken()
	if err != nil {
		return "", err
	}
	err = d.withLockFile(ctx, dirLockPath(d.root, name), true, func(f *os.File) (bool, error) {
		rec, err := readLockRecord(f)
		if err != nil {
			return false, err
		}
		now := d.now().UnixNano()
		if rec.valid && now < rec.expiry {
			return false, ErrLockHeld
		}
		// Free, or held by someone whose lease ran out: ours now. The flock
		// makes this read-then-write one step for every process.
		return false, writeLockRecord(f, lockRecord{valid: true, token: token, expiry: expiryAt(now, ttl)})
	})
	if errors.Is(err, ErrLockHeld) {
		return "", ErrLockHeld
	}
	if err != nil {
		return "", fmt.Errorf("cache: dir lock %q: %w", name, err)
	}
	return token, nil
}

// Unlock implements Cache.
func (d *Dir) Unlock(ctx context.Context, name, token string) error {
	if err := d.check(ctx, "unlock"); err != nil {
		return err
	}
	err := d.withLockFile(ctx, dirLockPath(d.root, name), false, func(f *os.File) (bool, error) {
		rec, err := readLockRecord(f)
		if err != nil {
			return false, err
		}
		return rec.valid && rec.token == token, nil
	})
	if err != nil {
		return fmt.Errorf("cache: dir unlock %q: %w", name, err)
	}
	return nil
}

// Close marks the cache closed; later calls fail. Files stay for the next
// OpenDir. It is safe to call more than once.
func (d *Dir) Close() error {
	d.closed.Store(true)
	d.closeOnce.Do(func() { close(d.done) })
	return nil
}

// entryChecksum is CRC-32C, which is hardware-accelerated on common CPUs, so
// checking tens of MB costs little next to reading them.
func entryChecksum(value []byte) uint32 {
	return crc32.Checksum(value, crc32.MakeTable(crc32.Castagnoli)) // MakeTable caches Castagnoli
}

// expiryAt is now+ttl in Unix nanoseconds, saturating instead of wrapping
// around: a huge ttl means "about never", not "already expired".
func expiryAt(now int64, ttl time.Duration) int64 {
	if int64(ttl) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(ttl)
}

func (d *Dir) check(ctx context.Context, op string) error {
	if d.closed.Load() {
		return fmt.Errorf("cache: dir %s: %w", op, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cache: dir %s: %w", op, err)
	}
	return nil
}

// discard removes an expired or damaged entry, but only if path is still the
// file that was read: another process may have renamed a fresh value over it
// since. (A rename landing between the Stat and the Remove is still lost; that
// costs one recomputation, never a wrong value.)
func (d *Dir) discard(path string, read fs.FileInfo) {
	if now, err := os.Stat(path); err == nil && os.SameFile(read, now) {
		_ = os.Remove(path)
	}
}

// removeStaleTemps deletes temporary files left by writers that crashed
// between creating and renaming them.
func (d *Dir) removeStaleTemps() {
	tmpDir := dirTmpPath(d.root)
	entries, err := os.ReadDir(tmpDir)
	if err != nil {
		return // best effort: leftovers only cost disk space
	}
	cutoff := d.now().Add(-staleTempAge)
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(tmpDir, e.Name()))
		}
	}
}

// withLockFile runs fn on the lock file at path while holding an exclusive
// flock on it, and removes the file afterwards if fn says so. With create
// false, a missing file means there is nothing to do.
//
// Lock files are removed when released, so one process may flock a file that
// another has just unlinked; after taking the flock we therefore check that
// path still names the same file, and start again if not.
func (d *Dir) withLockFile(ctx context.Context, path string, create bool, fn func(*os.File) (remove bool, err error)) error {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
	}
	for {
		f, err := os.OpenFile(path, flag, 0o600)
		if !create && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		same, err := lockAndCheck(ctx, f, path)
		if err != nil {
			_ = f.Close() // closing also drops the flock
			return err
		}
		if !same {
			_ = f.Close()
			continue
		}
		remove, err := fn(f)
		if remove {
			// Unlinked while still locked, so nobody can take the lock from
			// this file any more; late comers see it is gone and retry.
			if rerr := os.Remove(path); rerr != nil && err == nil {
				err = rerr
			}
		}
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
		return err
	}
}

// lockAndCheck takes the flock on f, then reports whether path still names f.
func lockAndCheck(ctx context.Context, f *os.File, path string) (bool, error) {
	if err := flockExclusive(ctx, f); err != nil {
		return false, err
	}
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	cur, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(held, cur), nil
}

// A lock file holds one line, "v1 <token> <expiry unix nanos>\n". A file that
// is empty or does not parse (a writer died mid-write, before its TryLock could
// succeed) is a free lock.
type lockRecord struct {
	valid  bool
	token  string
	expiry int64
}

// maxLockRecord bounds how much of a lock file is read; real records are ~60 bytes.
const maxLockRecord = 256

func readLockRecord(f *os.File) (lockRecord, error) {
	buf := make([]byte, maxLockRecord)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return lockRecord{}, err
	}
	line, ok := bytes.CutSuffix(buf[:n], []byte("\n"))
	if !ok {
		return lockRecord{}, nil
	}
	fields := strings.Fields(string(line))
	if len(fields) != 3 || fields[0] != "v1" {
		return lockRecord{}, nil
	}
	expiry, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return lockRecord{}, nil
	}
	return lockRecord{valid: true, token: fields[1], expiry: expiry}, nil
}

func writeLockRecord(f *os.File, rec lockRecord) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(fmt.Sprintf("v1 %s %d\n", rec.token, rec.expiry)), 0)
	return err
}
