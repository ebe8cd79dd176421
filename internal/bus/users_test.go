package bus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/autocoder/autocoder/internal/bus"
)

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadUsers(t *testing.T) {
	t.Parallel()
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	good := "users:\n  - {user: a, password: plain-pw, role: llm-worker}\n  - {nkey: " + pub + ", role: producer}\n"
	users, err := bus.LoadUsers(writeFile(t, "users.yaml", good))
	if err != nil || len(users) != 2 || users[1].NKey != pub || users[0].Role != bus.RoleLLMWorker {
		t.Fatalf("LoadUsers = %+v, %v", users, err)
	}
	if _, err := bus.LoadUsers(writeFile(t, "users.json", `{"users": [{"user": "a", "password": "p", "role": "coordinator"}]}`)); err != nil {
		t.Errorf("a JSON users file: %v", err)
	}
	for _, tc := range []struct{ name, file, wantErr string }{
		{"no users", "users: []\n", "no users"},
		{"unknown role", "users: [{user: a, password: plain-pw, role: admin}]", `role "admin"`},
		{"no password", "users: [{user: a, role: producer}]", "password"},
		{"password and nkey", "users: [{user: a, password: plain-pw, nkey: " + pub + ", role: producer}]", "not both"},
		{"not a user nkey", "users: [{nkey: SUAXXX, role: producer}]", "public key"},
		{"twice", "users: [{user: a, password: plain-pw, role: producer}, {user: a, password: plain-pw, role: producer}]", "twice"},
		{"reserved", "users: [{user: autocoder-in-process, password: plain-pw, role: producer}]", "reserved"},
		{"unknown field", "users: [{user: a, pasword: plain-pw, role: producer}]", "pasword"},
		{"empty", "", "no users"},
	} {
		_, err := bus.LoadUsers(writeFile(t, "users.yaml", tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: LoadUsers = %v, want an error mentioning %q", tc.name, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "plain-pw") {
			t.Errorf("%s: the error shows a password: %v", tc.name, err)
		}
	}
}

func TestClientAuthOptions(t *testing.T) {
	t.Parallel()
	pw := writeFile(t, "pw", "from-file\n")
	for _, tc := range []struct {
		name    string
		auth    bus.ClientAuth
		wantErr string
	}{
		{"nothing", bus.ClientAuth{}, ""},
		{"user and password", bus.ClientAuth{User: "u", Password: "p"}, ""},
		{"user and password file", bus.ClientAuth{User: "u", PasswordFile: pw}, ""},
		{"password without user", bus.ClientAuth{Password: "p"}, "a user needs a password"},
		{"password and file", bus.ClientAuth{User: "u", Password: "p", PasswordFile: pw}, "not both"},
		{"missing password file", bus.ClientAuth{User: "u", PasswordFile: "/nonexistent/pw"}, "/nonexistent/pw"},
		{"two ways", bus.ClientAuth{User: "u", Password: "p", CredsFile: pw}, "give one of"},
		{"missing nkey seed", bus.ClientAuth{NKeyFile: "/nonexistent/seed"}, "/nonexistent/seed"},
		{"missing creds", bus.ClientAuth{CredsFile: "/nonexistent/creds"}, "/nonexistent/creds"},
		{"certificate without key", bus.ClientAuth{CertFile: pw}, "both the certificate and its key"},
	} {
		_, err := tc.auth.Options()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Options() = %v, want error %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestListenerTLS: with a certificate, the listener speaks TLS to a client
// that trusts its CA, still requires a user, and the in-process connection
// needs neither.
func TestListenerTLS(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	srv, err := bus.StartEmbedded(bus.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", TLSCert: cert, TLSKey: key,
		Users: []bus.User{{Name: "p", Password: testPassword, Role: bus.RoleProducer}}})
	if err != nil {
		t.Fatalf("StartEmbedded with TLS: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	local, err := srv.Connect()
	if err != nil {
		t.Fatalf("in-process Connect: %v", err)
	}
	local.Close()

	opts, err := bus.ClientAuth{User: "p", Password: testPassword, CAFile: cert, Role: bus.RoleProducer}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := bus.Connect(ctxT(t), srv.ClientURL(), "tls-client", nil, opts...)
	if err != nil {
		t.Fatalf("Connect over TLS: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Error("the connection is not TLS")
	}
	if _, err := bus.Connect(ctxT(t), srv.ClientURL(), "no-user", nil, nats.RootCAs(cert)); err == nil {
		t.Error("a TLS connection without a user was let in")
	}
}

// selfSigned writes a certificate for 127.0.0.1 that is its own CA.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "autocoder-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	return certFile, keyFile
}
