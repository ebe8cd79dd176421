package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/autocoder/autocoder/internal/bus"
	"github.com/autocoder/autocoder/internal/client"
)

// Handler serves the coordinator's HTTP API:
//
//	GET /healthz            liveness
//	GET /metrics            Prometheus metrics from reg
//	GET /v1/jobs/{id}       the result object so far (Contract 5)
//	GET /v1/jobs/{id}/result the final result object, 404 while running
func Handler(c *client.Client, reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	if reg != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	}
	if c != nil {
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
