package bus_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
	"gopkg.in/yaml.v3"

	"github.com/autocoder/autocoder/internal/bus"
)

var update = flag.Bool("update", false, "rewrite deploy/compose/nats.conf from the permission table")

// composeConf is deploy/compose/nats.conf: one user per role, named after
// it, its password from NATS_<ROLE>_PASSWORD (compose.yaml passes them).
const composeConf = "../../deploy/compose/nats.conf"

func composeUsers() []bus.ConfUser {
	var users []bus.ConfUser
	for _, r := range bus.Roles() {
		env := "NATS_" + strings.ToUpper(strings.ReplaceAll(string(r), "-", "_")) + "_PASSWORD"
		u := bus.ConfUser{Name: string(r), PasswordEnv: env, Role: r}
		if r == bus.RoleToolServer {
			u.Tools = []string{bus.AnyTool} // compose has one tool server; give each tool provider a user of its own
		}
		users = append(users, u)
	}
	return users
}

// TestComposeNATSConf: the checked-in compose NATS configuration is what
// the permission table generates (go test ./internal/bus -run TestComposeNATSConf -update
// rewrites it), and nats-server reads from it each role's permissions.
func TestComposeNATSConf(t *testing.T) {
	want, err := bus.ServerConf("Generated from internal/bus/permissions.go; do not edit. Regenerate with\n"+
		"  go test ./internal/bus -run TestComposeNATSConf -update\n"+
		"Passwords come from the environment (NATS_<ROLE>_PASSWORD, see compose.yaml).", composeUsers())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(composeConf, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(composeConf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Fatalf("%s is stale; regenerate it with -update (-want +got):\n%s", composeConf, diff)
	}

	for _, u := range composeUsers() {
		t.Setenv(u.PasswordEnv, "pw-"+u.Name)
	}
	abs, _ := filepath.Abs(composeConf)
	opts, err := server.ProcessConfigFile(abs)
	if err != nil {
		t.Fatalf("nats-server reads %s: %v", composeConf, err)
	}
	if !opts.SyncAlways {
		t.Errorf("%s: JetStream does not flush every write (sync_interval: always)", composeConf)
	}
	byName := map[string]*server.User{}
	for _, u := range opts.Users {
		byName[u.Username] = u
	}
	for _, u := range composeUsers() {
		su := byName[u.Name]
		if su == nil || su.Password != "pw-"+u.Name || su.Permissions == nil {
			t.Fatalf("user %s: %+v, want its password from %s and permissions", u.Name, su, u.PasswordEnv)
		}
		p, _ := bus.PermissionsOf(bus.Grant{Role: u.Role, Name: u.Name, Tools: u.Tools})
		got := bus.Permission{Publish: su.Permissions.Publish.Allow, Subscribe: su.Permissions.Subscribe.Allow}
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("user %s as nats-server reads it (-want +got):\n%s", u.Name, diff)
		}
	}
}

// TestComposeUsesCredentials: every compose service on NATS logs in as a
// user of nats.conf with that user's password, read from the user's
// compose secret (a file, never an environment variable), which the nats
// service reads into the variable nats.conf names; NATS publishes no port.
func TestComposeUsesCredentials(t *testing.T) {
	b, err := os.ReadFile("../../deploy/compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Ports       []string          `yaml:"ports"`
			Environment map[string]string `yaml:"environment"`
			Secrets     []string          `yaml:"secrets"`
			Command     []string          `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	nats := compose.Services["nats"]
	if len(nats.Ports) > 0 {
		t.Errorf("the nats service publishes ports %v", nats.Ports)
	}
	secretOf := map[string]string{} // user -> its password's secret
	for _, u := range composeUsers() {
		secret := "nats_" + strings.ReplaceAll(u.Name, "-", "_") + "_password"
		secretOf[u.Name] = secret
		read := "export " + u.PasswordEnv + "=\"$$(cat /run/secrets/" + secret + ")\""
		if !slices.Contains(nats.Secrets, secret) || !strings.Contains(strings.Join(nats.Command, "\n"), read) {
			t.Errorf("the nats service does not read secret %s into %s", secret, u.PasswordEnv)
		}
	}
	clients := 0
	for name, s := range compose.Services {
		if s.Environment["AUTOCODER_NATS_URL"] == "" {
			continue
		}
		clients++
		user := s.Environment["AUTOCODER_NATS_USER"]
		secret := secretOf[user]
		if secret == "" || s.Environment["AUTOCODER_NATS_PASSWORD_FILE"] != "/run/secrets/"+secret || !slices.Contains(s.Secrets, secret) {
			t.Errorf("service %s: NATS user %q with password file %q (secrets %v), want a nats.conf user and its secret",
				name, user, s.Environment["AUTOCODER_NATS_PASSWORD_FILE"], s.Secrets)
		}
		if pw, ok := s.Environment["AUTOCODER_NATS_PASSWORD"]; ok {
			t.Errorf("service %s: a NATS password in the environment (%q): compose prints it", name, pw)
		}
	}
	if clients < 4 {
		t.Errorf("%d services on NATS, want the coordinator, both workers and submit", clients)
	}
}
