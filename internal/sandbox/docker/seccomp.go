package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/profiles/seccomp"
)

// securityOpts are every sandbox container's security options: no new
// privileges, and Docker's default seccomp profile (moby/profiles).
//
// The profile is named, not left to the engine, for Podman: its own
// default (containers/common) lets a process without capabilities call
// unshare and clone with CLONE_NEWUSER, and so become root in a user
// namespace of its own (and mount a tmpfs over /usr there). Docker's
// profile allows those only to CAP_SYS_ADMIN, which no sandbox has, and
// answers clone3 with ENOSYS so that glibc falls back to clone. Docker
// Engine takes the profile inline, as its CLI sends --security-opt
// seccomp=FILE; Podman's compat API (4.x) reads the value as a path on
// its own machine, so for Podman the profile is written to a file, named
// by its content, which the engine must be on this machine to read.
func (b *Backend) securityOptions() ([]string, error) {
	profile, err := json.Marshal(seccomp.DefaultProfile())
	if err != nil {
		return nil, fmt.Errorf("docker: encode the seccomp profile: %w", err)
	}
	if !b.podman {
		return []string{"no-new-privileges", "seccomp=" + string(profile)}, nil
	}
	if !engineIsLocal(b.cli.DaemonHost()) {
		return nil, fmt.Errorf("docker: the Podman engine at %s is not on this machine, and it reads the sandbox's seccomp profile "+
			"(which refuses nested user namespaces) from a file on its own: run the engine here", b.cli.DaemonHost())
	}
	path, err := writeProfile(profile)
	if err != nil {
		return nil, err
	}
	return []string{"no-new-privileges", "seccomp=" + path}, nil
}

// enginePodman reports whether the engine is Podman's compat service.
func (b *Backend) enginePodman(ctx context.Context) (bool, error) {
	v, err := b.cli.ServerVersion(ctx)
	if err != nil {
		return false, fmt.Errorf("docker: engine version: %w", err)
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true, nil
		}
	}
	return false, nil
}

// writeProfile writes the profile to a file named by its hash in the
// temporary directory (readable by the engine, the same for every worker
// of this version) and returns its path.
func writeProfile(profile []byte) (string, error) {
	sum := sha256.Sum256(profile)
	path := filepath.Join(os.TempDir(), "autocoder-seccomp-"+hex.EncodeToString(sum[:8])+".json")
	if data, err := os.ReadFile(path); err == nil && string(data) == string(profile) {
		return path, nil
	}
	tmp, err := os.CreateTemp(os.TempDir(), "autocoder-seccomp-*.tmp")
	if err != nil {
		return "", fmt.Errorf("docker: write the seccomp profile: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(profile); err != nil {
		tmp.Close()
		return "", fmt.Errorf("docker: write the seccomp profile: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", fmt.Errorf("docker: write the seccomp profile: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("docker: write the seccomp profile: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("docker: write the seccomp profile: %w", err)
	}
	return path, nil
}
