package submit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/pkg/messages"
)

// Saved connection profiles, as `temporal env` or kubectl contexts: a
// deployment's NATS URL and credentials (and its HTTP URL and token, for
// the HTTP clients) under a name, in the user's config dir
// (<config dir>/autocoder/profiles.json, 0600). Secrets are kept by file
// reference only: the file holds the path, never the password, and
// nothing here prints a secret. The environment still wins: a profile
// fills only what AUTOCODER_* leaves unset.

// Profile is one saved connection.
type Profile struct {
	NATSURL          string `json:"nats_url,omitempty"`
	NATSUser         string `json:"nats_user,omitempty"`
	NATSPasswordFile string `json:"nats_password_file,omitempty"`
	NATSCredsFile    string `json:"nats_creds_file,omitempty"`
	NATSNKeyFile     string `json:"nats_nkey_file,omitempty"`
	NATSCAFile       string `json:"nats_ca_file,omitempty"`
	NATSCertFile     string `json:"nats_cert_file,omitempty"`
	NATSKeyFile      string `json:"nats_key_file,omitempty"`
	HTTPURL          string `json:"http_url,omitempty"`
	TokenFile        string `json:"token_file,omitempty"`
}

// profileFile is the file the profiles are saved in.
type profileFile struct {
	Current  string             `json:"current,omitempty"`
	Profiles map[string]Profile `json:"profiles"`
}

// profilePath is <user config dir>/autocoder/profiles.json.
func profilePath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("profiles: %w", err)
	}
	return filepath.Join(dir, "autocoder", "profiles.json"), nil
}

// maxProfileFileBytes bounds the profiles file.
const maxProfileFileBytes = 1 << 20

func loadProfiles() (*profileFile, string, error) {
	path, err := profilePath()
	if err != nil {
		return nil, "", err
	}
	pf := &profileFile{Profiles: map[string]Profile{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return pf, path, nil
	case err != nil:
		return nil, "", fmt.Errorf("profiles: %w", err)
	case len(b) > maxProfileFileBytes:
		return nil, "", fmt.Errorf("profiles: %s is over %d bytes", path, maxProfileFileBytes)
	}
	if err := json.Unmarshal(b, pf); err != nil {
		return nil, "", fmt.Errorf("profiles: %s: %w", path, err)
	}
	if pf.Profiles == nil {
		pf.Profiles = map[string]Profile{}
	}
	return pf, path, nil
}

// save writes the profiles, readable by the user only, atomically.
func (pf *profileFile) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	b, _ := json.MarshalIndent(pf, "", "  ")
	tmp, err := os.CreateTemp(filepath.Dir(path), ".profiles-*")
	if err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(append(b, '\n'))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			return fmt.Errorf("profiles: %w", err)
		}
		return nil
	}
	tmp.Close()
	return fmt.Errorf("profiles: cannot make %s private", tmp.Name())
}

// profileCommands are the subcommands of `submit profile`.
func profileCommands() []command {
	return []command{
		{"set", "profile set NAME [--nats-url URL] [--user NAME] [--password-file PATH] [--creds-file PATH] [--nkey-file PATH] [--ca-file PATH] [--cert-file PATH] [--key-file PATH] [--http-url URL] [--token-file PATH]", profileSetCmd},
		{"use", "profile use NAME", profileUseCmd},
		{"list", "profile list [-o json|yaml]", profileListCmd},
		{"show", "profile show [NAME] [-o json|yaml]", profileShowCmd},
		{"env", "profile env [NAME]", profileEnvCmd},
		{"delete", "profile delete NAME", profileDeleteCmd},
	}
}

// profileCmd is `submit profile set|use|list|show|env|delete` (group).
func profileCmd(ctx context.Context, in *invocation) (int, error) {
	return group(ctx, in, "profile", profileCommands())
}

// validProfileName: letters, digits, '.', '_' and '-', at most 63.
func validProfileName(name string) error {
	if name == "" || len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return &messages.FieldError{Field: "profile", Msg: fmt.Sprintf("%q is not a profile name (letters, digits, '.', '_' and '-', at most 63)", name)}
	}
	return nil
}

// profileSetCmd creates profile NAME or changes the fields given. The
// first profile saved becomes the current one.
func profileSetCmd(_ context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	var p Profile
	fields := []struct {
		flag, usage string
		dst         *string
		file        bool
	}{
		{"nats-url", "the deployment's NATS URL", &p.NATSURL, false},
		{"user", "NATS user name", &p.NATSUser, false},
		{"password-file", "file holding the NATS password (the profile keeps the path, never the password)", &p.NATSPasswordFile, true},
		{"creds-file", "NATS JWT creds file", &p.NATSCredsFile, true},
		{"nkey-file", "NATS nkey seed file", &p.NATSNKeyFile, true},
		{"ca-file", "PEM CA of the NATS server's certificate", &p.NATSCAFile, true},
		{"cert-file", "PEM client certificate for NATS", &p.NATSCertFile, true},
		{"key-file", "PEM key of the client certificate", &p.NATSKeyFile, true},
		{"http-url", "the deployment's HTTP API, for the HTTP clients (submit profile env)", &p.HTTPURL, false},
		{"token-file", "file holding the HTTP API token (the path is kept, never the token)", &p.TokenFile, true},
	}
	for _, f := range fields {
		fs.StringVar(f.dst, f.flag, "", f.usage)
	}
	pos, err := in.positional(fs, 1)
	if err != nil {
		return 0, err
	}
	if err := validProfileName(pos[0]); err != nil {
		return 0, err
	}
	pf, path, err := loadProfiles()
	if err != nil {
		return 0, err
	}
	saved := pf.Profiles[pos[0]]
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if len(set) == 0 {
		return 0, usagef("profile set %s: give at least one setting (see submit profile set --help)", pos[0])
	}
	for _, f := range fields {
		if !set[f.flag] {
			continue
		}
		v := *f.dst
		if (f.flag == "nats-url" || f.flag == "http-url") && hasUserinfo(v) {
			return 0, &messages.FieldError{Field: f.flag, Msg: "a user or password in the URL would be kept and shown: give --user and --password-file (or --token-file)"}
		}
		if f.file && v != "" {
			if v, err = filepath.Abs(v); err != nil {
				return 0, err
			}
			if _, err := os.Stat(v); err != nil {
				return 0, &messages.FieldError{Field: f.flag, Msg: err.Error()}
			}
		}
		*profileField(&saved, f.flag) = v
	}
	pf.Profiles[pos[0]] = saved
	if pf.Current == "" {
		pf.Current = pos[0]
	}
	if err := pf.save(path); err != nil {
		return 0, err
	}
	fmt.Fprintf(in.io.Stdout, "profile %s saved in %s", pos[0], path)
	if pf.Current == pos[0] {
		fmt.Fprint(in.io.Stdout, " (the current profile)")
	}
	fmt.Fprintln(in.io.Stdout)
	return ExitSuccess, nil
}

// hasUserinfo reports whether the URL (or a list of them, comma-separated)
// names a user or password.
func hasUserinfo(urls string) bool {
	for _, s := range strings.Split(urls, ",") {
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			return true
		}
	}
	return false
}

// profileField is the field of p a `profile set` flag sets.
func profileField(p *Profile, flagName string) *string {
	return map[string]*string{"nats-url": &p.NATSURL, "user": &p.NATSUser, "password-file": &p.NATSPasswordFile,
		"creds-file": &p.NATSCredsFile, "nkey-file": &p.NATSNKeyFile, "ca-file": &p.NATSCAFile,
		"cert-file": &p.NATSCertFile, "key-file": &p.NATSKeyFile, "http-url": &p.HTTPURL, "token-file": &p.TokenFile}[flagName]
}

// profileArg parses a profile subcommand's flags and its NAME (optional:
// the current profile).
func (in *invocation) profileArg(fs *flag.FlagSet, optional bool) (string, *profileFile, string, error) {
	pos, err := in.parse(fs)
	if err != nil {
		return "", nil, "", err
	}
	if len(pos) > 1 || (len(pos) == 0 && !optional) {
		return "", nil, "", in.usageError()
	}
	pf, path, err := loadProfiles()
	if err != nil {
		return "", nil, "", err
	}
	name := pf.Current
	if len(pos) == 1 {
		name = pos[0]
	}
	if name == "" {
		return "", nil, "", usagef("no current profile: name one, or choose one with submit profile use NAME")
	}
	if _, ok := pf.Profiles[name]; !ok {
		return "", nil, "", usagef("profile %s: not saved (submit profile list)", name)
	}
	return name, pf, path, nil
}

func profileUseCmd(_ context.Context, in *invocation) (int, error) {
	name, pf, path, err := in.profileArg(in.flagSet(), false)
	if err != nil {
		return 0, err
	}
	pf.Current = name
	if err := pf.save(path); err != nil {
		return 0, err
	}
	fmt.Fprintf(in.io.Stdout, "profile %s is the current profile\n", name)
	return ExitSuccess, nil
}

func profileDeleteCmd(_ context.Context, in *invocation) (int, error) {
	name, pf, path, err := in.profileArg(in.flagSet(), false)
	if err != nil {
		return 0, err
	}
	delete(pf.Profiles, name)
	if pf.Current == name {
		pf.Current = ""
	}
	if err := pf.save(path); err != nil {
		return 0, err
	}
	fmt.Fprintf(in.io.Stdout, "profile %s deleted\n", name)
	return ExitSuccess, nil
}

func profileListCmd(_ context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	var format outputFormat
	registerOutput(fs, &format, "the profiles")
	if _, err := in.positional(fs, 0); err != nil {
		return 0, err
	}
	pf, _, err := loadProfiles()
	if err != nil {
		return 0, err
	}
	if format != formatHuman {
		return ExitSuccess, printAs(in.io.Stdout, format, pf)
	}
	if len(pf.Profiles) == 0 {
		fmt.Fprintln(in.io.Stdout, "no profiles (submit profile set NAME --nats-url URL ...)")
		return ExitSuccess, nil
	}
	tw := tabwriter.NewWriter(in.io.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CURRENT\tNAME\tNATS\tUSER\tHTTP")
	for _, name := range sortedKeys(pf.Profiles) {
		p, mark := pf.Profiles[name], ""
		if name == pf.Current {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, name, messages.Printable(p.NATSURL), messages.Printable(p.NATSUser), messages.Printable(p.HTTPURL))
	}
	tw.Flush()
	return ExitSuccess, nil
}

func profileShowCmd(_ context.Context, in *invocation) (int, error) {
	fs := in.flagSet()
	format := formatYAML
	registerOutput(fs, &format, "the profile")
	name, pf, _, err := in.profileArg(fs, true)
	if err != nil {
		return 0, err
	}
	if format == formatHuman {
		format = formatYAML
	}
	return ExitSuccess, printAs(in.io.Stdout, format, map[string]any{"name": name, "current": name == pf.Current, "profile": pf.Profiles[name]})
}

// profileEnvCmd prints the profile as the environment variables the
// other clients read (the Python client, curl scripts): eval "$(submit profile env)".
func profileEnvCmd(_ context.Context, in *invocation) (int, error) {
	name, pf, _, err := in.profileArg(in.flagSet(), true)
	if err != nil {
		return 0, err
	}
	writeEnv(in.io.Stdout, pf.Profiles[name])
	return ExitSuccess, nil
}

func writeEnv(w io.Writer, p Profile) {
	for _, kv := range [][2]string{{"AUTOCODER_NATS_URL", p.NATSURL}, {"AUTOCODER_NATS_USER", p.NATSUser},
		{"AUTOCODER_NATS_PASSWORD_FILE", p.NATSPasswordFile}, {"AUTOCODER_NATS_CREDS_FILE", p.NATSCredsFile},
		{"AUTOCODER_NATS_NKEY_FILE", p.NATSNKeyFile}, {"AUTOCODER_NATS_CA_FILE", p.NATSCAFile},
		{"AUTOCODER_NATS_CERT_FILE", p.NATSCertFile}, {"AUTOCODER_NATS_KEY_FILE", p.NATSKeyFile},
		{"AUTOCODER_URL", p.HTTPURL}, {"AUTOCODER_TOKEN_FILE", p.TokenFile}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "export %s='%s'\n", kv[0], strings.ReplaceAll(kv[1], "'", `'\''`))
		}
	}
}

func sortedKeys(m map[string]Profile) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// withProfile is cfg with the chosen profile filling what the environment
// left unset. The profile is --profile NAME (taken out of args, wherever
// it is), else AUTOCODER_PROFILE, else the current one; the current one
// applies only when no NATS URL is set, by the environment or by
// --nats-url (either names another deployment, which must not get the
// profile's credentials), and never to --local (which runs its own).
func withProfile(cfg config.Config, args []string) (config.Config, []string, error) {
	name, args, err := profileFlag(args)
	if err != nil {
		return cfg, args, err
	}
	if name == "" {
		name = os.Getenv("AUTOCODER_PROFILE")
	}
	explicit := name != ""
	if len(args) > 0 && (args[0] == "profile" || args[0] == "completion" || args[0] == "__complete" || args[0] == "version") ||
		flagGiven(args, "local") || (!explicit && (cfg.NATSURL != "" || flagGiven(args, "nats-url"))) {
		return cfg, args, nil
	}
	pf, _, err := loadProfiles()
	if err != nil {
		return cfg, args, err
	}
	if !explicit {
		name = pf.Current
	}
	p, ok := pf.Profiles[name]
	switch {
	case name == "":
		return cfg, args, nil
	case !ok:
		return cfg, args, usagef("profile %s: not saved (submit profile list)", name)
	}
	for _, f := range []struct {
		dst *string
		v   string
	}{{&cfg.NATSURL, p.NATSURL}, {&cfg.NATSUser, p.NATSUser}, {&cfg.NATSPasswordFile, p.NATSPasswordFile},
		{&cfg.NATSCredsFile, p.NATSCredsFile}, {&cfg.NATSNKeyFile, p.NATSNKeyFile}, {&cfg.NATSCAFile, p.NATSCAFile},
		{&cfg.NATSCertFile, p.NATSCertFile}, {&cfg.NATSKeyFile, p.NATSKeyFile}} {
		if *f.dst == "" {
			*f.dst = f.v
		}
	}
	if cfg.NATSPassword != "" && p.NATSPasswordFile != "" && os.Getenv("AUTOCODER_NATS_PASSWORD_FILE") == "" {
		cfg.NATSPasswordFile = "" // a password in the environment wins over the profile's file
	}
	return cfg, args, nil
}

// flagGiven reports whether args, up to "--", give the flag name in any of
// the forms the flag package reads (-name, --name, either with =value); a
// boolean given =false is not.
func flagGiven(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		n, v, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if n == name && (!hasValue || v != "false") {
			return true
		}
	}
	return false
}

// profileFlag takes --profile NAME (or --profile=NAME) out of args.
func profileFlag(args []string) (string, []string, error) {
	out := make([]string, 0, len(args))
	name := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return name, append(out, args[i:]...), nil
		case a == "--profile" || a == "-profile":
			if i+1 >= len(args) {
				return "", args, usagef("--profile needs a NAME")
			}
			name = args[i+1]
			i++
		case strings.HasPrefix(a, "--profile=") || strings.HasPrefix(a, "-profile="):
			_, name, _ = strings.Cut(a, "=")
		default:
			out = append(out, a)
		}
	}
	return name, out, nil
}
