package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serveMetrics serves metrics at GET /metrics on --metrics-addr, alone: a
// port of its own is what a network rule can restrict, since /metrics on
// the API's port is open to whoever may call the API.
func (m *Server) serveMetrics(metrics http.Handler) error {
	ln, err := net.Listen("tcp", m.MetricsAddr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %s: %w", m.MetricsAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			m.logger.Error("metrics listener stopped", "addr", m.MetricsAddr, "err", err)
		}
	}()
	m.stops = append(m.stops, func() { _ = srv.Close() })
	m.logger.Info("serving /metrics", "addr", ln.Addr().String())
	return nil
}
