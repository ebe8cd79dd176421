package httpapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// ticketTTL is how long an events ticket opens its stream. It is checked
// when the stream opens, so a long job's stream outlives it.
const ticketTTL = 30 * time.Second

// tickets sign short-lived events tickets. A browser's EventSource cannot
// send an Authorization header, and a token in the URL would land in proxy
// and access logs for good; a ticket there opens one job's events for
// ticketTTL and nothing else. The key is per process: a restart voids every
// ticket, which costs a page one new request.
type tickets struct {
	key [32]byte
	now func() time.Time
}

func newTickets() *tickets {
	t := &tickets{now: time.Now}
	rand.Read(t.key[:]) // never fails (crypto/rand since Go 1.24)
	return t
}

// issue returns a ticket for jobID's events.
func (t *tickets) issue(jobID string) (string, time.Time) {
	exp := t.now().Add(ticketTTL).Truncate(time.Second)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(exp.Unix()))
	return base64.RawURLEncoding.EncodeToString(append(b[:], t.mac(jobID, b[:])...)), exp
}

// valid reports whether ticket was issued for jobID and has not expired.
func (t *tickets) valid(ticket, jobID string) bool {
	raw, err := base64.RawURLEncoding.DecodeString(ticket)
	if err != nil || len(raw) != 8+sha256.Size {
		return false
	}
	if !hmac.Equal(raw[8:], t.mac(jobID, raw[:8])) {
		return false
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(raw[:8])), 0)
	return t.now().Before(exp)
}

func (t *tickets) mac(jobID string, exp []byte) []byte {
	m := hmac.New(sha256.New, t.key[:])
	m.Write([]byte("events\x00"))
	m.Write(exp)
	m.Write([]byte(jobID))
	return m.Sum(nil)
}
