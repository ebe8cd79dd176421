package docker

import (
	"strings"
	"testing"
)

// TestJobImageNames: a job's name becomes a repository component Docker
// and Podman accept, whatever it holds, and parseEnv reads both forms back
// to the image runs use.
func TestJobImageNames(t *testing.T) {
	t.Parallel()
	hash := strings.Repeat("ab", 16)
	tests := []struct{ job, want string }{
		{"summarize-sales", "autocoder-env-summarize-sales:" + hash},
		{"Sales_Report.v2", "autocoder-env-sales-report-v2:" + hash},
		{"--x__y..", "autocoder-env-x-y:" + hash},
		{"...", ""},
		{"", ""},
		{strings.Repeat("a", 70), "autocoder-env-" + strings.Repeat("a", 63) + ":" + hash},
		{strings.Repeat("a", 62) + "_b", "autocoder-env-" + strings.Repeat("a", 62) + ":" + hash},
	}
	for _, tt := range tests {
		got := jobImageName(tt.job, hash)
		if got != tt.want {
			t.Errorf("jobImageName(%q) = %q, want %q", tt.job, got, tt.want)
			continue
		}
		if got == "" {
			continue
		}
		img, job, ok := parseEnv(got)
		if !ok || img != imageName(hash) || job != jobNameTag(tt.job) {
			t.Errorf("parseEnv(%q) = %q %q %v", got, img, job, ok)
		}
	}
	for _, bad := range []string{"autocoder-env:xyz", "autocoder-env-:" + hash, "other:" + hash, "autocoder-env-a--b:" + hash, "autocoder-env-A:" + hash} {
		if _, _, ok := parseEnv(bad); ok {
			t.Errorf("parseEnv(%q) accepted", bad)
		}
	}
}

// TestEngineRaceRecognised: what Podman says when a build's cache lookup
// meets an image or layer removed meanwhile (seen in a CI run, with other
// builds on the engine) is taken for the engine's race and built again;
// an installer's failure is not.
func TestEngineRaceRecognised(t *testing.T) {
	t.Parallel()
	race := "docker: build autocoder-env:bfc31b6e46e8: checking if cached image exists from a previous build: getting top layer info: layer not known"
	if !engineRaceRe.MatchString(race) {
		t.Errorf("not taken for a race: %q", race)
	}
	for _, failure := range []string{
		"build failed: autocoder-env:x: The command '/bin/sh -c pip install nosuch' returned a non-zero code: 1",
		"docker: build autocoder-env:x: a package source could not be reached: Temporary failure resolving 'deb.debian.org'",
	} {
		if engineRaceRe.MatchString(failure) {
			t.Errorf("taken for a race: %q", failure)
		}
	}
}
