package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// NATSAuthConfig is how a process authenticates to NATS and, for
// coordinator --embedded, who may connect to the NATS it hosts.
type NATSAuthConfig struct {
	// Client side, every binary: at most one of user and password (or
	// password file), nkey seed file and creds file; TLS beside them.
	NATSUser         string // AUTOCODER_NATS_USER
	NATSPassword     string // AUTOCODER_NATS_PASSWORD; never logged, never shown by --help
	NATSPasswordFile string // AUTOCODER_NATS_PASSWORD_FILE: the password, read from a file
	NATSNKeyFile     string // AUTOCODER_NATS_NKEY_FILE: an nkey seed file
	NATSCredsFile    string // AUTOCODER_NATS_CREDS_FILE: a JWT creds file
	NATSCAFile       string // AUTOCODER_NATS_CA_FILE: PEM CA of the server's certificate
	NATSCertFile     string // AUTOCODER_NATS_CERT_FILE: PEM client certificate
	NATSKeyFile      string // AUTOCODER_NATS_KEY_FILE: PEM key of the client certificate

	// Server side, coordinator --embedded's listener.
	NATSUsersFile string // AUTOCODER_NATS_USERS_FILE: users and their roles (YAML or JSON)
	// NATSAuth is AUTOCODER_NATS_AUTH: empty means a listener requires the
	// users file; "none" lets anyone in, the operator's explicit choice.
	NATSAuth    string
	NATSTLSCert string // AUTOCODER_NATS_TLS_CERT: PEM certificate of the listener (TLS on)
	NATSTLSKey  string // AUTOCODER_NATS_TLS_KEY: PEM key of NATSTLSCert
}

// NATSAuthNone is the NATSAuth value that switches the listener's
// authentication off.
const NATSAuthNone = "none"

func natsAuthFromEnv() NATSAuthConfig {
	return NATSAuthConfig{
		NATSUser:         os.Getenv("AUTOCODER_NATS_USER"),
		NATSPassword:     os.Getenv("AUTOCODER_NATS_PASSWORD"),
		NATSPasswordFile: os.Getenv("AUTOCODER_NATS_PASSWORD_FILE"),
		NATSNKeyFile:     os.Getenv("AUTOCODER_NATS_NKEY_FILE"),
		NATSCredsFile:    os.Getenv("AUTOCODER_NATS_CREDS_FILE"),
		NATSCAFile:       os.Getenv("AUTOCODER_NATS_CA_FILE"),
		NATSCertFile:     os.Getenv("AUTOCODER_NATS_CERT_FILE"),
		NATSKeyFile:      os.Getenv("AUTOCODER_NATS_KEY_FILE"),
		NATSUsersFile:    os.Getenv("AUTOCODER_NATS_USERS_FILE"),
		NATSAuth:         os.Getenv("AUTOCODER_NATS_AUTH"),
		NATSTLSCert:      os.Getenv("AUTOCODER_NATS_TLS_CERT"),
		NATSTLSKey:       os.Getenv("AUTOCODER_NATS_TLS_KEY"),
	}
}

func (c *NATSAuthConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.NATSUser, "nats-user", c.NATSUser, "NATS user name, with a password (AUTOCODER_NATS_USER)")
	fs.Var(secret{&c.NATSPassword}, "nats-password", "NATS `password`; prefer the file or the environment (AUTOCODER_NATS_PASSWORD)")
	fs.StringVar(&c.NATSPasswordFile, "nats-password-file", c.NATSPasswordFile, "file holding the NATS password (AUTOCODER_NATS_PASSWORD_FILE)")
	fs.StringVar(&c.NATSNKeyFile, "nats-nkey-file", c.NATSNKeyFile, "NATS nkey seed file (AUTOCODER_NATS_NKEY_FILE)")
	fs.StringVar(&c.NATSCredsFile, "nats-creds-file", c.NATSCredsFile, "NATS JWT creds file (AUTOCODER_NATS_CREDS_FILE)")
	fs.StringVar(&c.NATSCAFile, "nats-ca-file", c.NATSCAFile, "PEM CA that signed the NATS server's certificate (AUTOCODER_NATS_CA_FILE)")
	fs.StringVar(&c.NATSCertFile, "nats-cert-file", c.NATSCertFile, "PEM client certificate for NATS (AUTOCODER_NATS_CERT_FILE)")
	fs.StringVar(&c.NATSKeyFile, "nats-key-file", c.NATSKeyFile, "PEM key of the NATS client certificate (AUTOCODER_NATS_KEY_FILE)")
	fs.StringVar(&c.NATSUsersFile, "nats-users-file", c.NATSUsersFile, "users and roles allowed into an embedded NATS's listener (AUTOCODER_NATS_USERS_FILE)")
	fs.StringVar(&c.NATSAuth, "nats-auth", c.NATSAuth, "none: let anyone into an embedded NATS's listener, unauthenticated (AUTOCODER_NATS_AUTH)")
	fs.StringVar(&c.NATSTLSCert, "nats-tls-cert", c.NATSTLSCert, "PEM certificate of an embedded NATS's listener; set: TLS (AUTOCODER_NATS_TLS_CERT)")
	fs.StringVar(&c.NATSTLSKey, "nats-tls-key", c.NATSTLSKey, "PEM key of the embedded NATS's certificate (AUTOCODER_NATS_TLS_KEY)")
}

func (c *NATSAuthConfig) validate() error {
	switch c.NATSAuth {
	case "", NATSAuthNone:
	default:
		return fmt.Errorf("AUTOCODER_NATS_AUTH: %q is not empty or %s", c.NATSAuth, NATSAuthNone)
	}
	if c.NATSAuth == NATSAuthNone && c.NATSUsersFile != "" {
		return fmt.Errorf("AUTOCODER_NATS_AUTH=%s and AUTOCODER_NATS_USERS_FILE contradict each other: unset one", NATSAuthNone)
	}
	if (c.NATSTLSCert == "") != (c.NATSTLSKey == "") {
		return fmt.Errorf("AUTOCODER_NATS_TLS_CERT and AUTOCODER_NATS_TLS_KEY go together")
	}
	return nil
}

// secret is a flag whose value --help never shows: its default may come
// from the environment.
type secret struct{ p *string }

func (s secret) String() string { return "" }

func (s secret) Set(v string) error { *s.p = v; return nil }

// natsURLFlag is a NATS URL flag whose --help default hides the
// credentials a URL may carry (nats://user:password@host).
type natsURLFlag struct{ p *string }

func (f natsURLFlag) String() string {
	if f.p == nil {
		return ""
	}
	parts := strings.Split(*f.p, ",")
	for i, p := range parts {
		if scheme, rest, ok := strings.Cut(p, "://"); ok {
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				parts[i] = scheme + "://redacted" + rest[at:]
			}
		}
	}
	return strings.Join(parts, ",")
}

func (f natsURLFlag) Set(v string) error { *f.p = v; return nil }
