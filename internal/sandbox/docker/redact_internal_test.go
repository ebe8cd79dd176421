package docker

import (
	"strings"
	"testing"
)

// TestRedactBuildText: an engine's echo of the pip RUN line keeps the index
// host but loses its password or token, however it is escaped.
func TestRedactBuildText(t *testing.T) {
	t.Parallel()
	b := &Backend{cfg: Config{
		PipIndexURL:  "https://user:p%40ss-s3cr3t@pypi.example/simple",
		PipFindLinks: []string{"https://tok3n-s3cr3t@wheels.example/", "/srv/wheels", "::bad"},
	}}
	text := `Step 4/4 : RUN ["python3","-m","pip","--index-url","https://user:p%40ss-s3cr3t@pypi.example/simple","--find-links","https://tok3n-s3cr3t@wheels.example/"]
The command '/usr/bin/env ... --index-url https://user:p%40ss-s3cr3t@pypi.example/simple' returned a non-zero code: 1
decoded p@ss-s3cr3t`
	got := b.redactBuildText(text)
	for _, s := range []string{"s3cr3t"} {
		if strings.Contains(got, s) {
			t.Errorf("redacted text still holds %q:\n%s", s, got)
		}
	}
	if !strings.Contains(got, "https://user:****@pypi.example/simple") || !strings.Contains(got, "https://****@wheels.example/") {
		t.Errorf("redaction lost the hosts:\n%s", got)
	}
	if none := (&Backend{}).redactBuildText(text); none != text {
		t.Errorf("no credentials configured, yet the text changed")
	}
}
