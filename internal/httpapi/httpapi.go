package httpapi

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
	"github.com/autocoder/autocoder/pkg/messages"
)

//go:embed ui/index.html
var indexHTML []byte

// Handler serves the coordinator's HTTP API:
//
//	GET /                   the web UI: jobs, live stage progress, results
//	GET /v1/jobs            the newest jobs (at most 200), newest first
//	GET /healthz            liveness
//	GET /metrics            Prometheus metrics from reg
//	GET /v1/jobs/{id}       the result object so far (Contract 5 (docs/contracts.md))
//	GET /v1/jobs/{id}/result the final result object, 404 while running
//	GET /v1/jobs/{id}/events progress events as Server-Sent Events, ending with the result
func Handler(c *client.Client, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'")
		w.Write(indexHTML)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	if reg != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	}
	if c != nil {
		mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
			jobs, err := c.List(r.Context(), 200)
			writeResult(w, jobs, err)
		})
		mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
			id := r.PathValue("id")
			if !bus.ValidJobID(id) {
				http.Error(w, "invalid job id", http.StatusBadRequest)
				return
			}
			res, err := c.Status(r.Context(), id)
			writeResult(w, res, err)
		})
		mux.HandleFunc("GET /v1/jobs/{id}/result", func(w http.ResponseWriter, r *http.Request) {
			id := r.PathValue("id")
			if !bus.ValidJobID(id) {
				http.Error(w, "invalid job id", http.StatusBadRequest)
				return
			}
			res, err := c.Result(r.Context(), id)
			writeResult(w, res, err)
		})
		mux.HandleFunc("GET /v1/jobs/{id}/events", func(w http.ResponseWriter, r *http.Request) {
			id := r.PathValue("id")
			if !bus.ValidJobID(id) {
				http.Error(w, "invalid job id", http.StatusBadRequest)
				return
			}
			if _, err := c.Status(r.Context(), id); err != nil {
				writeResult(w, nil, err)
				return
			}
			flusher, _ := w.(http.Flusher)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			send := func(event string, v any) error {
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
					return err
				}
				if flusher != nil {
					flusher.Flush()
				}
				return nil
			}
			res, err := c.Watch(r.Context(), id, func(e messages.Event) error { return send(string(e.Type), e) })
			if err == nil {
				_ = send("result", res)
			}
		})
	}
	return mux
}

func writeResult(w http.ResponseWriter, res any, err error) {
	switch {
	case errors.Is(err, client.ErrNotFound):
		http.Error(w, "job not found", http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	}
}
