package bus

import (
	"fmt"
	"strconv"
	"strings"
)

// ConfUser is one user of a standalone nats-server's configuration
// (ServerConf): its name, the environment variable nats-server reads its
// password from, and its role.
type ConfUser struct {
	Name        string
	PasswordEnv string
	Role        Role
	Tools       []string // a tool server's tools (Grant.Tools)
}

// ServerConf renders the authorization block of a nats-server
// configuration file granting users their roles' permissions
// (PermissionsOf): what deploy/compose/nats.conf is generated from, so that
// a standalone NATS and the embedded one enforce the same table.
func ServerConf(header string, users []ConfUser) (string, error) {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(header), "\n") {
		b.WriteString("# " + l + "\n")
	}
	// The stores hold the only copy of the jobs: every write reaches the
	// disk before it is acknowledged (sync.go says why and what it costs).
	b.WriteString("# Flush every JetStream write before acknowledging it: the default (every 2m)\n" +
		"# can lose acknowledged writes in a power loss (see internal/bus/sync.go).\n")
	b.WriteString("jetstream {\n  sync_interval: " + SyncAlways + "\n}\n")
	b.WriteString("authorization {\n  users = [\n")
	for _, u := range users {
		p, err := PermissionsOf(Grant{Role: u.Role, Name: u.Name, Tools: u.Tools})
		if err != nil {
			return "", err
		}
		// $NAME unquoted is a variable, resolved from the environment;
		// subjects are quoted, or $JS.API... would be one too.
		fmt.Fprintf(&b, "    {\n      # role %s\n      user: %s\n      password: $%s\n", u.Role, strconv.Quote(u.Name), u.PasswordEnv)
		fmt.Fprintf(&b, "      permissions: {\n        publish: {allow: %s}\n        subscribe: {allow: %s}\n      }\n    }\n",
			confList(p.Publish), confList(p.Subscribe))
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

// confList is a list of quoted subjects, one a line.
func confList(subjects []string) string {
	if len(subjects) == 1 {
		return "[" + strconv.Quote(subjects[0]) + "]"
	}
	var b strings.Builder
	b.WriteString("[\n")
	for _, s := range subjects {
		b.WriteString("          " + strconv.Quote(s) + ",\n")
	}
	b.WriteString("        ]")
	return b.String()
}
