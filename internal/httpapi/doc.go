// Package httpapi is the coordinator's HTTP surface: health, Prometheus
// metrics and read access to jobs' result objects.
//
//	srv := &http.Server{Addr: addr, Handler: httpapi.Handler(st.Client, reg)}
package httpapi
