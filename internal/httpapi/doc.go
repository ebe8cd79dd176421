// Package httpapi is the coordinator's HTTP surface: health, Prometheus
// metrics, read access to jobs' result objects and the web UI, behind bearer
// tokens with scopes (read, submit) and a Host check against DNS rebinding.
//
//	o, err := httpapi.FromConfig(cfg, cfg.HTTPListen, log) // ErrNoTokens without tokens
//	srv := &http.Server{Addr: addr, Handler: httpapi.Handler(st.Client, metricsBuilder.Handler(), o)}
package httpapi
