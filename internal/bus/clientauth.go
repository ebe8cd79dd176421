package bus

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ClientAuth is how a process proves who it is to NATS, and the TLS it
// speaks. The zero value sends no credentials and speaks TLS only when the
// URL says tls://. At most one of user/password, NKeyFile and CredsFile.
type ClientAuth struct {
	User         string // with Password or PasswordFile
	Password     string
	PasswordFile string // the password, read from a file (trailing newline dropped)
	NKeyFile     string // an nkey seed file (SU...)
	CredsFile    string // a decentralized-auth creds file (JWT and seed)
	CAFile       string // PEM CA that signed the server's certificate
	CertFile     string // PEM client certificate, for servers that verify clients
	KeyFile      string // PEM key of CertFile

	// Role picks the inbox prefix (InboxPrefix) the role's permissions allow
	// replies on. Empty: the default _INBOX, for a NATS without our permissions.
	Role Role
}

// Options are the nats.Options of a: credentials, TLS, inbox prefix. Its
// errors name files, never a secret.
func (a ClientAuth) Options() ([]nats.Option, error) {
	var opts []nats.Option
	creds, err := a.credentials()
	if err != nil {
		return nil, err
	}
	opts = append(opts, creds...)
	if a.CAFile != "" {
		opts = append(opts, nats.RootCAs(a.CAFile))
	}
	switch {
	case a.CertFile != "" && a.KeyFile != "":
		opts = append(opts, nats.ClientCert(a.CertFile, a.KeyFile))
	case a.CertFile != "" || a.KeyFile != "":
		return nil, errors.New("bus: NATS client certificate: give both the certificate and its key")
	}
	if a.Role != "" {
		opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(a.Role)))
	}
	return opts, nil
}

// credentials is the one way a identifies itself, if any.
func (a ClientAuth) credentials() ([]nats.Option, error) {
	ways := 0
	for _, set := range []bool{a.User != "" || a.Password != "" || a.PasswordFile != "", a.NKeyFile != "", a.CredsFile != ""} {
		if set {
			ways++
		}
	}
	if ways > 1 {
		return nil, errors.New("bus: NATS credentials: give one of user and password, an nkey seed file or a creds file")
	}
	switch {
	case a.NKeyFile != "":
		o, err := nats.NkeyOptionFromSeed(a.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("bus: NATS nkey seed file %s: %w", a.NKeyFile, err)
		}
		return []nats.Option{o}, nil
	case a.CredsFile != "":
		if _, err := os.Stat(a.CredsFile); err != nil {
			return nil, fmt.Errorf("bus: NATS creds file: %w", err)
		}
		return []nats.Option{nats.UserCredentials(a.CredsFile)}, nil
	case a.User != "" || a.Password != "" || a.PasswordFile != "":
		return a.userInfo()
	}
	return nil, nil
}

func (a ClientAuth) userInfo() ([]nats.Option, error) {
	password := a.Password
	if a.PasswordFile != "" {
		if password != "" {
			return nil, errors.New("bus: NATS password: give the password or a password file, not both")
		}
		b, err := os.ReadFile(a.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("bus: NATS password file: %w", err)
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	if a.User == "" || password == "" {
		return nil, errors.New("bus: NATS credentials: a user needs a password and a password a user")
	}
	return []nats.Option{nats.UserInfo(a.User, password)}, nil
}

// Identity is the name a's user asks as (CancelSubject, TaskSubject):
// the user name, or the public key of its nkey or creds. It is "" without
// credentials: such a client asks on the subjects without a name, which
// only a NATS without our permissions (or an in-process connection) lets
// it publish.
func (a ClientAuth) Identity() (string, error) {
	switch {
	case a.User != "":
		return a.User, nil
	case a.NKeyFile != "":
		b, err := os.ReadFile(a.NKeyFile)
		if err != nil {
			return "", fmt.Errorf("bus: NATS nkey seed file: %w", err)
		}
		return publicKey(b)
	case a.CredsFile != "":
		b, err := os.ReadFile(a.CredsFile)
		if err != nil {
			return "", fmt.Errorf("bus: NATS creds file: %w", err)
		}
		seed, err := nkeys.ParseDecoratedNKey(b)
		if err != nil {
			return "", fmt.Errorf("bus: NATS creds file %s: %w", a.CredsFile, err)
		}
		return seed.PublicKey()
	}
	return "", nil
}

// publicKey is the public key of an nkey seed (trailing space dropped).
func publicKey(seed []byte) (string, error) {
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return "", fmt.Errorf("bus: NATS nkey seed: %w", err)
	}
	return kp.PublicKey()
}
