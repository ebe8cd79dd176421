package submit

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/config"
)

// Help: `submit [COMMAND] --help` prints, on stdout, the command's usage,
// its own flags and the connection settings a client uses; the server
// settings (sandbox, model, cache...) apply only to a --local job, so they
// are listed only when --local is given too (`submit --local --help`).
// Every setting is still accepted as a flag by every command, as by every
// binary; help just does not drown the few that matter.

// connectionFlags are the settings a client needs to reach a deployment,
// in the order help lists them.
var connectionFlags = []string{
	"nats-url", "nats-user", "nats-password", "nats-password-file", "nats-nkey-file", "nats-creds-file",
	"nats-ca-file", "nats-cert-file", "nats-key-file", "state-dir", "log-level",
}

// settingNames are the names of every settings flag (config.Config.Register).
func settingNames() map[string]bool {
	fs := flag.NewFlagSet("settings", flag.ContinueOnError)
	var c config.Config
	c.Register(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// flagSet is the command's flag set. It prints nothing itself: --help is
// printed on stdout by parse, and an error is one line from Run.
func (in *invocation) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(in.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses the command's flags, which may come before, between and
// after its positional arguments, and returns those. --help prints the
// command's help on stdout and returns flag.ErrHelp (exit 0); any other
// flag error is a usage error (exit 2).
func (in *invocation) parse(fs *flag.FlagSet) ([]string, error) {
	pos, err := parseInterleaved(fs, in.args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			in.printHelp(fs)
		}
		return nil, flagError(err)
	}
	return pos, nil
}

// printHelp writes the command's usage line and flags to stdout.
func (in *invocation) printHelp(fs *flag.FlagSet) {
	w := in.io.Stdout
	fmt.Fprintf(w, "usage: submit %s\n", in.usage)
	settings := settingNames()
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !settings[f.Name] {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nflags:")
		printFlags(w, own)
	}
	var conn []*flag.Flag
	for _, name := range connectionFlags {
		if f := fs.Lookup(name); f != nil {
			conn = append(conn, f)
		}
	}
	if len(conn) == 0 {
		return
	}
	fmt.Fprintln(w, "\nconnection (flags, or the AUTOCODER_* variables named, or a saved profile):")
	printFlags(w, conn)
	fmt.Fprintln(w, "  --profile NAME: the saved connection profile to use (AUTOCODER_PROFILE; default: the current one, see submit profile --help)")
	local := fs.Lookup("local")
	switch {
	case local == nil:
	case local.Value.String() == "true":
		var server []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) {
			if settings[f.Name] && !slices.Contains(connectionFlags, f.Name) {
				server = append(server, f)
			}
		})
		fmt.Fprintln(w, "\nserver settings of a --local run:")
		printFlags(w, server)
	default:
		fmt.Fprintln(w, "\nwith --local, the server settings apply too: add --local before --help to list them")
	}
}

// printFlags lists flags one a line: --name VALUE  what it does.
func printFlags(w io.Writer, flags []*flag.Flag) {
	rows := make([][2]string, len(flags))
	width := 0
	for i, f := range flags {
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name // -o
		}
		if kind != "" {
			name += " " + strings.ToUpper(kind)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += " (default " + f.DefValue + ")"
		}
		rows[i] = [2]string{name, usage}
		width = max(width, len(name))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], r[1])
	}
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}
