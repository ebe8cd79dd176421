package docker

import (
	"net/url"
	"strings"
)

// redactBuildText cuts the credentials of the package index and find-links
// URLs out of build output. The engine echoes every RUN instruction, pip's
// --index-url included, in the build log and in its error message, and both
// reach logs and the job's result.
func (b *Backend) redactBuildText(s string) string {
	for _, secret := range urlCredentials(append([]string{b.cfg.PipIndexURL}, b.cfg.PipFindLinks...)) {
		s = strings.ReplaceAll(s, secret, "****")
	}
	return s
}

// urlCredentials are the secrets in urls' user info: each password, as
// written and decoded, or a user name that stands alone (a token).
func urlCredentials(urls []string) []string {
	var out []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			continue
		}
		secret, ok := u.User.Password()
		if !ok {
			secret = u.User.Username()
		}
		if secret == "" {
			continue
		}
		out = append(out, secret)
		if esc := url.QueryEscape(secret); esc != secret {
			out = append(out, esc, url.PathEscape(secret))
		}
	}
	return out
}
