package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/pkg/messages"
)

// Options say who may use the API.
type Options struct {
	// Tokens are the bearer tokens accepted. Nil, unless Open is set, makes
	// every endpoint but / and /healthz answer 401: a server that forgot its
	// tokens fails closed.
	Tokens *Tokens
	// Open serves every endpoint without a token (AUTOCODER_HTTP_AUTH=none).
	Open bool
	// AllowedHosts are the Host names answered besides localhost and IP
	// literals: the listen host and AUTOCODER_HTTP_ALLOWED_HOSTS. Any other
	// name is refused, so a page whose DNS name was rebound to this address
	// cannot read it (DNS rebinding).
	AllowedHosts []string
	// Logger gets refused requests at debug level; nil: discard.
	Logger *slog.Logger
	// Ready, if set, says whether the process can do its work (GET
	// /readyz): nil, or what does not answer. Nil: /readyz answers as
	// /healthz does.
	Ready func(context.Context) error
}

// access is Options at work: the checks every request goes through.
type access struct {
	Options
	tickets *tickets
}

// hostAllowed reports whether a request's Host is this server's: an IP
// literal (a rebinding attack needs a name the attacker controls),
// localhost, or an allowed name.
func (a *access) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || net.ParseIP(host) != nil {
		return true
	}
	return slices.ContainsFunc(a.AllowedHosts, func(h string) bool { return strings.EqualFold(h, host) })
}

// checkHost wraps the whole API in the Host check.
func (a *access) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /healthz and /readyz stay open to probes that address the server
		// by a name nobody listed; they say "ok", or what is not ready.
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && !a.hostAllowed(r.Host) {
			a.refuse(r, "host not allowed")
			writeError(w, http.StatusMisdirectedRequest, messages.CodeMisdirected, "host not allowed: add it to AUTOCODER_HTTP_ALLOWED_HOSTS")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// require lets a request through when its bearer token grants scope.
func (a *access) require(scope Scope, next http.HandlerFunc) http.HandlerFunc {
	if scope == "" {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if a.allowed(w, r, scope) {
			next(w, r)
		}
	}
}

// allowed checks r's bearer token for scope and, when it fails, answers:
// 401 for no token or an unknown one, 403 for a token without the scope.
func (a *access) allowed(w http.ResponseWriter, r *http.Request, scope Scope) bool {
	if a.Open {
		return true
	}
	token, ok := bearer(r)
	name, known, granted := a.Tokens.Check(token, scope)
	switch {
	case ok && granted:
		return true
	case ok && known:
		a.refuse(r, "scope not granted", "token", name, "scope", string(scope))
		w.Header().Set("WWW-Authenticate", `Bearer realm="autocoder", error="insufficient_scope", scope="`+string(scope)+`"`)
		writeError(w, http.StatusForbidden, messages.CodeForbidden, "token lacks the "+string(scope)+" scope")
	default:
		a.refuse(r, "no valid bearer token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="autocoder"`)
		writeError(w, http.StatusUnauthorized, messages.CodeUnauthorized, "a bearer token is required (Authorization: Bearer <token>)")
	}
	return false
}

func (a *access) refuse(r *http.Request, why string, attrs ...any) {
	if a.Logger != nil {
		a.Logger.Debug("http request refused", append([]any{"reason", why, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr}, attrs...)...)
	}
}

// bearer is the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
