package cache

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"log/slog"
	"sync/atomic"
	"time"
)

var _ Cache = (*Signed)(nil)

// Signed entry format, what the inner cache stores under the caller's key:
//
//	magic   4 bytes  "acs1"
//	idlen   1 byte   length of the key id
//	id      idlen bytes
//	mac     32 bytes HMAC-SHA256 (see mac)
//	value
const (
	signedMagic = "acs1"
	macLen      = sha256.Size
)

// macDomain starts every MAC input, so a signature made for a cache entry
// means nothing anywhere else the same secret might be used.
const macDomain = "autocoder cache entry v1\x00"

// Reasons an entry fails its check, passed to SignedConfig.OnFailure (and a
// fine metric label: there are three).
const (
	FailureUnsigned     = "unsigned"      // no signature, or not a signed entry at all
	FailureUnknownKey   = "unknown_key"   // signed with a key id this keyring lacks
	FailureBadSignature = "bad_signature" // the signature does not match key and value
)

// SignedConfig configures a Signed cache. The zero value is usable.
type SignedConfig struct {
	// Logger receives a warning for each entry that fails its check; nil
	// discards. Cache keys are truncated and secrets never logged.
	Logger *slog.Logger
	// OnFailure, if set, is called with the reason (FailureUnsigned, ...)
	// of each entry that fails its check: a metrics hook. It must be safe
	// for concurrent use.
	OnFailure func(reason string)
}

// Signed is a Cache that signs every value it stores with an HMAC-SHA256
// over the key and the value, and treats an entry whose signature is
// missing, wrong or made with an unknown key as a miss. Whoever can write
// to the backing store (a Redis shared by a fleet, a cache directory) but
// does not hold the key cannot make a worker accept a result it did not
// compute: a forged or tampered entry costs a recomputation, and the fresh
// value overwrites it. A signature binds the value to its key, so a genuine
// value copied under another key fails too.
//
// Locks are passed through unsigned: a lock guards no data, only who does
// the work. A forged or stolen lock can delay work or let it be done twice
// (no worse than what write access to the store allows anyway, such as
// deleting every entry), but it can never put a wrong value in front of a
// reader, because every value is still checked on Get. TTLs are not signed
// either: re-storing a genuine entry with a longer ttl only keeps a correct
// value longer.
type Signed struct {
	inner     Cache
	keys      *Keyring
	log       *slog.Logger
	onFailure func(string)
	failures  atomic.Uint64
}

// NewSigned wraps inner so that its values are signed with keys.
func NewSigned(inner Cache, keys *Keyring, cfg SignedConfig) (*Signed, error) {
	if inner == nil || keys == nil || keys.sign.ID == "" {
		return nil, errors.New("cache: signed: an inner cache and a keyring are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Signed{inner: inner, keys: keys, log: log, onFailure: cfg.OnFailure}, nil
}

// Failures is how many entries have failed their check since NewSigned.
func (s *Signed) Failures() uint64 { return s.failures.Load() }

// Get implements Cache. An entry that fails its check is a miss.
func (s *Signed) Get(ctx context.Context, key string) ([]byte, error) {
	entry, err := s.inner.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	value, id, reason := s.open(key, entry)
	if reason != "" {
		s.reject(key, id, reason)
		return nil, ErrMiss
	}
	return value, nil
}

// Set implements Cache.
func (s *Signed) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return s.inner.Set(ctx, key, s.seal(key, value), ttl)
}

// Delete implements Cache.
func (s *Signed) Delete(ctx context.Context, key string) error { return s.inner.Delete(ctx, key) }

// TryLock implements Cache; locks are not signed (see Signed).
func (s *Signed) TryLock(ctx context.Context, name string, ttl time.Duration) (string, error) {
	return s.inner.TryLock(ctx, name, ttl)
}

// Unlock implements Cache.
func (s *Signed) Unlock(ctx context.Context, name, token string) error {
	return s.inner.Unlock(ctx, name, token)
}

// Close closes the inner cache.
func (s *Signed) Close() error { return s.inner.Close() }

// seal returns the signed entry of value under key.
func (s *Signed) seal(key string, value []byte) []byte {
	id := s.keys.sign.ID
	out := make([]byte, 0, len(signedMagic)+1+len(id)+macLen+len(value))
	out = append(out, signedMagic...)
	out = append(out, byte(len(id)))
	out = append(out, id...)
	out = mac(s.keys.sign.Secret, key, id, value).Sum(out)
	return append(out, value...)
}

// open checks a signed entry and returns its value, or the reason it is
// refused (and the key id it names, if any).
func (s *Signed) open(key string, entry []byte) (value []byte, id, reason string) {
	rest, ok := bytes.CutPrefix(entry, []byte(signedMagic))
	if !ok || len(rest) < 1 {
		return nil, "", FailureUnsigned
	}
	n := int(rest[0])
	rest = rest[1:]
	if len(rest) < n+macLen {
		return nil, "", FailureUnsigned
	}
	id, sum, value := string(rest[:n]), rest[n:n+macLen], rest[n+macLen:]
	secret, known := s.keys.verify[id]
	if !known {
		return nil, id, FailureUnknownKey
	}
	if !hmac.Equal(sum, mac(secret, key, id, value).Sum(nil)) {
		return nil, id, FailureBadSignature
	}
	return value, id, ""
}

// mac is the HMAC of one entry: the domain, then key and key id, each with
// its length in front (so no two (key, id, value) triples share an input),
// then the value.
func mac(secret []byte, key, id string, value []byte) hash.Hash {
	h := hmac.New(sha256.New, secret)
	var n [8]byte
	h.Write([]byte(macDomain))
	binary.BigEndian.PutUint64(n[:], uint64(len(key)))
	h.Write(n[:])
	h.Write([]byte(key))
	h.Write([]byte{byte(len(id))})
	h.Write([]byte(id))
	h.Write(value)
	return h
}

func (s *Signed) reject(key, id, reason string) {
	s.failures.Add(1)
	if s.onFailure != nil {
		s.onFailure(reason)
	}
	if !ValidKeyID(id) {
		id = "" // the entry's own bytes: log only what looks like an id
	}
	s.log.Warn("cache entry failed its signature check; treating it as a miss",
		"key", logKey(key), "key_id", id, "reason", reason)
}

// logKey shortens a cache key for a log line: the prefix, kind and the
// start of the hash are enough to find it, and a log line stays short.
func logKey(key string) string {
	const keep = 40
	if len(key) <= keep {
		return key
	}
	return key[:keep] + "..."
}
