package cache

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// MinSecretBytes is the shortest secret a Keyring accepts: 128 bits. Use 32
// random bytes (openssl rand -base64 32).
const MinSecretBytes = 16

// keyIDRe is what a key id may look like. Ids are stored in every entry and
// logged, so they are short and plain; they are names, not secrets.
var keyIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// ValidKeyID reports whether id can name a key of a Keyring.
func ValidKeyID(id string) bool { return keyIDRe.MatchString(id) }

// HMACKey is one key of a Keyring: an id stored beside each signature, so
// that keys can be rotated, and the secret itself.
type HMACKey struct {
	ID     string
	Secret []byte
}

// Keyring holds the keys of a Signed cache: the first signs new entries,
// every one verifies. To rotate, add the new key after the old one
// everywhere, then move it to the front, then drop the old one once its
// entries have expired or been recomputed.
//
// A Keyring never prints its secrets: its String, GoString and LogValue
// show the key ids only.
type Keyring struct {
	sign   HMACKey
	ids    []string // in the order given
	verify map[string][]byte
}

// NewKeyring returns a Keyring whose first key signs and whose keys all
// verify. Ids must be valid and distinct, secrets at least MinSecretBytes.
func NewKeyring(keys ...HMACKey) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("cache: keyring: no keys")
	}
	k := &Keyring{verify: make(map[string][]byte, len(keys))}
	for i, key := range keys {
		if !ValidKeyID(key.ID) {
			return nil, fmt.Errorf("cache: keyring: key %d: the id is not 1-32 letters, digits, '.', '_' or '-'", i+1)
		}
		if len(key.Secret) < MinSecretBytes {
			return nil, fmt.Errorf("cache: keyring: key %d (%s): the secret is %d bytes, want at least %d", i+1, key.ID, len(key.Secret), MinSecretBytes)
		}
		if _, dup := k.verify[key.ID]; dup {
			return nil, fmt.Errorf("cache: keyring: key %d: the id %s is used twice", i+1, key.ID)
		}
		k.verify[key.ID] = append([]byte(nil), key.Secret...)
		k.ids = append(k.ids, key.ID)
	}
	k.sign = HMACKey{ID: keys[0].ID, Secret: k.verify[keys[0].ID]}
	return k, nil
}

// ParseKeyring reads keys written as "id:base64secret", separated by commas
// or new lines (blank lines and lines starting with '#' are skipped); the
// first key signs. Errors name the bad entry by position (and id, when it
// is one) and never quote the secret.
func ParseKeyring(text string) (*Keyring, error) {
	var keys []HMACKey
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "#") {
			continue
		}
		for _, entry := range strings.Split(line, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			n++
			key, err := parseKey(entry)
			if err != nil {
				return nil, fmt.Errorf("entry %d: %w", n, err)
			}
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys (want id:base64secret[,id:base64secret...])")
	}
	k, err := NewKeyring(keys...)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "cache: keyring: "))
	}
	return k, nil
}

func parseKey(entry string) (HMACKey, error) {
	id, secret, ok := strings.Cut(entry, ":")
	if !ok {
		// The entry may be a bare secret: do not echo it.
		return HMACKey{}, errors.New("not id:base64secret")
	}
	id = strings.TrimSpace(id)
	if !ValidKeyID(id) {
		return HMACKey{}, errors.New("the key id is not 1-32 letters, digits, '.', '_' or '-'")
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(secret))
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(secret))
	}
	if err != nil {
		return HMACKey{}, fmt.Errorf("key %s: the secret is not base64", id)
	}
	if len(b) < MinSecretBytes {
		return HMACKey{}, fmt.Errorf("key %s: the secret is %d bytes, want at least %d", id, len(b), MinSecretBytes)
	}
	return HMACKey{ID: id, Secret: b}, nil
}

// IDs returns the key ids, the signing one first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// SigningID is the id of the key that signs new entries.
func (k *Keyring) SigningID() string { return k.sign.ID }

// String shows the key ids, never a secret.
func (k *Keyring) String() string {
	return fmt.Sprintf("cache.Keyring{sign: %s, keys: %d}", k.sign.ID, len(k.verify))
}

// GoString keeps %#v from printing the secrets.
func (k *Keyring) GoString() string { return k.String() }

// LogValue keeps slog from printing the secrets.
func (k *Keyring) LogValue() slog.Value { return slog.StringValue(k.String()) }

// LoadOrCreateKeyFile returns the keyring kept in the file at path, creating
// the file (mode 0600, one random key) if it does not exist: the key of one
// machine's embedded cache, which nobody has to configure. A file that
// others can read or write is refused, as ssh refuses such a private key.
func LoadOrCreateKeyFile(path string) (*Keyring, error) {
	k, err := loadKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := createKeyFile(path); err != nil {
		return nil, err
	}
	return loadKeyFile(path)
}

func loadKeyFile(path string) (*Keyring, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("cache key file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("cache key file %s has mode %#o: others may read it (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cache key file: %w", err)
	}
	k, err := ParseKeyring(string(b))
	if err != nil {
		return nil, fmt.Errorf("cache key file %s: %w", path, err)
	}
	return k, nil
}

// createKeyFile writes a new random key to path unless a file is already
// there. The key is written to a temporary file first and linked into
// place, so two processes starting at once agree on one key, and neither
// can read a half-written one.
func createKeyFile(path string) error {
	var secret [32]byte
	var id [4]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return fmt.Errorf("cache key file: %w", err)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("cache key file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cache key file: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".cache-key-*")
	if err != nil {
		return fmt.Errorf("cache key file: %w", err)
	}
	defer os.Remove(f.Name())
	content := fmt.Sprintf("# generated by autocoder for the embedded cache; keep it private\nlocal-%s:%s\n",
		hex.EncodeToString(id[:]), base64.StdEncoding.EncodeToString(secret[:]))
	_, err = f.WriteString(content) // CreateTemp made it 0600
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cache key file: %w", err)
	}
	return nil
}

// Derive returns a key for another use of the signing key, named by label
// (HMAC-SHA256 of the label under the signing secret): the same on every
// worker that shares the keyring, and no way back to the secret. The stage
// cache keys a job's secrets by a hash under such a key, so a rotated
// secret is not answered from the cache and no value is stored.
func (k *Keyring) Derive(label string) []byte {
	m := hmac.New(sha256.New, k.sign.Secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}
