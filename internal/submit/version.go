package submit

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release this binary is, when the build names it
// (go build -ldflags "-X github.com/autocoder/autocoder/internal/submit.Version=v1.2.3");
// else the module version and VCS revision Go recorded are shown.
var Version = ""

// versionCmd is `submit --version` (and `submit version`).
func versionCmd(_ context.Context, in *invocation) (int, error) {
	if len(in.args) > 0 && isHelp(in.args[0]) {
		fmt.Fprintln(in.io.Stdout, "usage: submit --version")
		return ExitSuccess, nil
	}
	fmt.Fprintln(in.io.Stdout, versionLine())
	return ExitSuccess, nil
}

// versionLine is "submit VERSION (revision REV[, modified], built DATE) GOVERSION OS/ARCH".
func versionLine() string {
	v, rev, at, modified := Version, "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	line := "submit " + v
	if rev != "" {
		line += " (revision " + rev[:min(12, len(rev))]
		if modified {
			line += ", modified"
		}
		if at != "" {
			line += ", " + at
		}
		line += ")"
	}
	return line + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}
