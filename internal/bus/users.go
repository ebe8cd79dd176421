package bus

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"
)

// User is one NATS user of the embedded server: a name and password
// (plain, or a bcrypt hash starting "$2"), or an nkey public key, and the
// role whose permissions it gets (PermissionsOf).
type User struct {
	Name     string `yaml:"user"`
	Password string `yaml:"password"`
	NKey     string `yaml:"nkey"`
	Role     Role   `yaml:"role"`
	// Tools are the code-mode tools a tool-server user may serve ("*":
	// any); the operator's table of who may answer which tool.
	Tools []string `yaml:"tools"`
}

// Grant is the user's row of the permission table: its role, its name
// (or nkey) and its tools.
func (u User) Grant() Grant { return Grant{Role: u.Role, Name: u.Name + u.NKey, Tools: u.Tools} }

// usersFile is the users file's shape (YAML, or JSON, which is YAML):
//
//	users:
//	  - {user: coordinator, password: "$2a$11$...", role: coordinator}
//	  - {user: llm-1, password: s3cret, role: llm-worker}
//	  - {nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4, role: sandbox-worker}
//	  - {user: ci, password: "$2a$11$...", role: producer}
//	  - {user: weather, password: "$2a$11$...", role: tool-server, tools: [weather, forecast]}
type usersFile struct {
	Users []User `yaml:"users"`
}

// LoadUsers reads and checks a users file. Its errors name the file and
// the entry, never a password.
func LoadUsers(path string) ([]User, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bus: users file: %w", err)
	}
	var f usersFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a misspelt "pasword" is an error, not a user without one
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("bus: users file %s: %w", path, err)
	}
	if len(f.Users) == 0 {
		return nil, fmt.Errorf("bus: users file %s: no users", path)
	}
	seen := map[string]bool{}
	for i, u := range f.Users {
		if err := u.check(); err != nil {
			return nil, fmt.Errorf("bus: users file %s: entry %d: %w", path, i+1, err)
		}
		id := u.Name + u.NKey
		if seen[id] {
			return nil, fmt.Errorf("bus: users file %s: entry %d: %s appears twice", path, i+1, id)
		}
		seen[id] = true
	}
	return f.Users, nil
}

func (u User) check() error {
	if !ValidRole(u.Role) {
		return fmt.Errorf("role %q is not one of %v", u.Role, Roles())
	}
	switch {
	case u.NKey != "" && (u.Name != "" || u.Password != ""):
		return errors.New("give either user and password, or nkey, not both")
	case u.NKey != "":
		if !nkeys.IsValidPublicUserKey(u.NKey) {
			return fmt.Errorf("nkey %q is not a user public key (U...)", u.NKey)
		}
	case u.Name == "" || u.Password == "":
		return errors.New("user and password (or nkey) are required")
	case u.Name == inProcessUser:
		return fmt.Errorf("user name %q is reserved", inProcessUser)
	case !ValidIdentity(u.Name):
		return fmt.Errorf("user name %q: want 1 to 64 letters, digits, '_' or '-' (a producer's name ends the subjects it asks on)", u.Name)
	}
	_, err := PermissionsOf(u.Grant())
	return err
}

// inProcessUser is the embedded server's own connection (the coordinator in
// the same process): all permissions, a random password nobody else knows.
const inProcessUser = "autocoder-in-process"

// serverAuth sets the users of opts, each with its role's permissions, plus
// the in-process user; it returns that user's password.
func serverAuth(opts *server.Options, users []User) (string, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	password := hex.EncodeToString(secret)
	// Hashed, so that the server does not warn about plain passwords when
	// the operator's are all hashed; the lowest cost: the secret is random.
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		return "", err
	}
	opts.Users = []*server.User{{Username: inProcessUser, Password: string(hash)}}
	for _, u := range users {
		perms, err := serverPermissions(u.Grant())
		if err != nil {
			return "", err
		}
		if u.NKey != "" {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: u.NKey, Permissions: perms})
			continue
		}
		opts.Users = append(opts.Users, &server.User{Username: u.Name, Password: u.Password, Permissions: perms})
	}
	return password, nil
}

func serverPermissions(g Grant) (*server.Permissions, error) {
	p, err := PermissionsOf(g)
	if err != nil {
		return nil, err
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: p.Publish},
		Subscribe: &server.SubjectPermission{Allow: p.Subscribe},
	}, nil
}

// listenerTLS is the TLS of the embedded server's listener, from PEM files.
func listenerTLS(certFile, keyFile string) (*tls.Config, error) {
	cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		return nil, fmt.Errorf("bus: embedded server TLS (cert %s, key %s): %w", certFile, keyFile, err)
	}
	return cfg, nil
}
