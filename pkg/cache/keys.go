package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
)

// Every name this package puts in Redis or on disk is built in this file, so
// the layout can be read (and versioned) in one place.

// keyPrefix is the namespace of every Redis key autocoder writes. Bump the
// version when the meaning of stored values changes, so old entries are
// simply never found again.
const keyPrefix = "autocoder:v1:"

// Key returns the cache key for a result of the given kind computed from parts,
// "autocoder:v1:<kind>:<hex sha256>". Each part is hashed with its length in
// front, so ("ab", "c") and ("a", "bc") give different keys, as do (x) and
// (x, ""). kind is kept readable in the key (it shows up in redis-cli and in
// logs) and should be a short identifier such as "stage" or "image".
func Key(kind string, parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return keyPrefix + kind + ":" + hex.EncodeToString(h.Sum(nil))
}

// lockKey is the Redis key (and, hashed, the lock file) of the named lock. It
// lives beside, not inside, the key space of Key's results.
func lockKey(name string) string {
	return keyPrefix + "lock:" + name
}

// Layout of a Dir cache:
//
//	<root>/data/<ab>/<sha256 of key>        one entry (header + value)
//	<root>/locks/<ab>/<sha256 of lock key>  one held lock (token + expiry)
//	<root>/tmp/                             values being written, renamed into data/
//
// Files are named by a hash so that any key or lock name is a safe file name,
// and sharded by its first byte so no directory grows too large.
const (
	dirData  = "data"
	dirLocks = "locks"
	dirTmp   = "tmp"
)

// dirEntryPath is the file that holds key's value in the Dir rooted at root.
func dirEntryPath(root, key string) string {
	return hashedPath(root, dirData, key)
}

// dirLockPath is the file that records who holds the named lock.
func dirLockPath(root, name string) string {
	return hashedPath(root, dirLocks, lockKey(name))
}

// dirTmpPath is where values are staged before the rename that publishes them.
// It is on the same file system as data/, so the rename is atomic.
func dirTmpPath(root string) string {
	return filepath.Join(root, dirTmp)
}

func hashedPath(root, area, name string) string {
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])
	return filepath.Join(root, area, h[:2], h)
}
