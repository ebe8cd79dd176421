package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/autocoder/autocoder/pkg/messages"
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

func TestStageDeadlines(t *testing.T) {
	t.Setenv("AUTOCODER_STAGE_DEADLINES", " build=45m, plan=5m,run_tests=1h30m ")
	c := FromEnv()
	got, err := c.Deadlines()
	if err != nil {
		t.Fatal(err)
	}
	want := map[messages.Stage]time.Duration{messages.StageBuild: 45 * time.Minute, messages.StagePlan: 5 * time.Minute,
		messages.StageRunTests: 90 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deadlines (-want +got):\n%s", diff)
	}
	if got, err := (&Config{}).Deadlines(); err != nil || got != nil {
		t.Errorf("no deadlines: %v, %v; want none", got, err)
	}
	for value, bad := range map[string]string{
		"build=45m,biuld=5m": `"biuld=5m"`,
		"plan":               `"plan"`,
		"plan=soon":          `"plan=soon"`,
		"plan=5m,code=-1m":   `"code=-1m"`,
		"fix=0s":             `"fix=0s"`,
	} {
		c := Config{StageDeadlines: value, StateDir: "/tmp", LogLevel: "info"}
		_, err := c.Deadlines()
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "AUTOCODER_STAGE_DEADLINES") {
			t.Errorf("%q: err = %v, want one naming %s", value, err, bad)
		}
		if verr := c.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("%q: Validate = %v, want the same error", value, verr)
		}
	}
}
