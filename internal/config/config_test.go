package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDockerExtraFromEnv: AUTOCODER_DOCKER_EXTRA_COMMANDS is one command
// per line (LF or CRLF), blank lines dropped, each kept as written.
func TestDockerExtraFromEnv(t *testing.T) {
	t.Setenv("AUTOCODER_DOCKER_EXTRA_COMMANDS", "update-ca-certificates\r\n\r\n  \necho 'a; b' > /etc/x\n")
	c := FromEnv()
	want := []string{"update-ca-certificates", "echo 'a; b' > /etc/x"}
	if diff := cmp.Diff(want, c.DockerExtra()); diff != "" {
		t.Errorf("DockerExtra (-want +got):\n%s", diff)
	}
	if got := (&Config{}).DockerExtra(); got != nil {
		t.Errorf("DockerExtra of no commands = %q, want none", got)
	}
}
