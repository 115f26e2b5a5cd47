package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	restate "github.com/restatedev/sdk-go"
	"github.com/restatedev/sdk-go/server"
)

// The Restate arms: a service of the Go SDK in the arm's process, served
// over HTTP/2 cleartext on loopback and registered with the throwaway
// server the driver started (restateserver.go), driven through the
// server's HTTP ingress, request and response.

// restateDurability is what Restate's default single-node setup gives:
// every append to its log (bifrost's replicated loglet, replication 1,
// stored by the node's own log-server) is written to RocksDB with its WAL
// synced before the log-server acknowledges it; appends queued while one
// is written go in the next write batch, one fsync for all (log-server's
// rocksdb_logstore/writer.rs, rocksdb-disable-wal-fsync=false). The
// partition store writes without a WAL: the log is what recovers it.
const restateDurability = "Restate log-server (RocksDB): WAL fsync at every write batch, before its appends are acknowledged"

func isRestate(a arm) bool { return strings.HasPrefix(a.id, "restate") }

// errRestateStatus is a non-2xx answer from the Restate server.
var errRestateStatus = errors.New("restate: unexpected status")

func noopRun(restate.RunContext) (string, error) { return "ok", nil }

// restateOneStep is a handler of one durable step.
func restateOneStep(ctx restate.Context, _ restate.Void) (string, error) {
	return restate.Run(ctx, noopRun)
}

// restateTenSteps is a handler of ten durable steps; it returns when each
// step finished, in Unix nanoseconds.
func restateTenSteps(ctx restate.Context, _ restate.Void) ([]int64, error) {
	ends := make([]int64, 0, 10)
	for range 10 {
		if _, err := restate.Run(ctx, noopRun); err != nil {
			return nil, err
		}
		ends = append(ends, time.Now().UnixNano())
	}
	return ends, nil
}

// restateService is the arm's service, served and registered.
type restateService struct {
	name    string // unique to this process: a registration never updates another arm's service
	ingress string
	hc      *http.Client
	srv     *http.Server
}

// serveRestate serves the handlers on a loopback port over HTTP/2
// cleartext (the server's default for a deployment) and registers them
// with the admin API.
func serveRestate(e restateEndpoints) (*restateService, error) {
	s := &restateService{
		name:    fmt.Sprintf("BenchSteps%d", os.Getpid()),
		ingress: e.ingress,
		hc:      &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
	h, err := server.NewRestate().
		WithLogger(slog.NewTextHandler(io.Discard, nil), true).
		Bind(restate.NewService(s.name).
			Handler("one", restate.NewServiceHandler(restateOneStep)).
			Handler("ten", restate.NewServiceHandler(restateTenSteps))).
		Handler()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	s.srv = &http.Server{Handler: h, Protocols: &protocols, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	body, _ := json.Marshal(map[string]string{"uri": "http://" + l.Addr().String()})
	if _, err := s.post(e.admin+"/deployments", body); err != nil {
		s.close()
		return nil, fmt.Errorf("register the deployment: %w", err)
	}
	return s, nil
}

// call invokes handler through the ingress and returns its response.
func (s *restateService) call(handler string) ([]byte, error) {
	return s.post(s.ingress+"/"+s.name+"/"+handler, nil)
}

// post sends body as JSON, or nothing: a handler of no input takes
// neither a body nor a content type.
func (s *restateService) post(url string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: POST %s: %s: %s", errRestateStatus, url, resp.Status, b)
	}
	return b, nil
}

func (s *restateService) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// runRestateCall is arm (r1): a handler of one step, from the POST to
// the ingress until its response is back.
func runRestateCall(o opts) (Result, error) {
	s, err := serveRestate(o.restate)
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	one := func(int) ([]time.Duration, int, error) {
		start := time.Now()
		if _, err := s.call("one"); err != nil {
			return nil, 0, err
		}
		return []time.Duration{time.Since(start)}, 1, nil
	}
	r, err := phases(o.latencyN, o.throughputN, one, restateCPU(o.restate.pid))
	r.ServerMB = treePSS(o.restate.pid)
	return r, err
}

// runRestateStep is arm (r2): one step of a ten-step handler. Latency is
// from the end of one step to the end of the next (steps 2 to 10);
// throughput and CPU count ten steps per invocation, its start and end
// included.
func runRestateStep(o opts) (Result, error) {
	s, err := serveRestate(o.restate)
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	one := func(int) ([]time.Duration, int, error) {
		b, err := s.call("ten")
		if err != nil {
			return nil, 0, err
		}
		var ends []int64
		if err := json.Unmarshal(b, &ends); err != nil {
			return nil, 0, fmt.Errorf("ten steps' answer %q: %w", b, err)
		}
		lat := make([]time.Duration, 0, 9)
		for i := 1; i < len(ends); i++ {
			lat = append(lat, time.Duration(ends[i]-ends[i-1]))
		}
		return lat, len(ends), nil
	}
	r, err := phases(o.latencyN, o.throughputN, one, restateCPU(o.restate.pid))
	r.ServerMB = treePSS(o.restate.pid)
	return r, err
}

// restateCPU reads the CPU time of the Restate server's process (all its
// threads).
func restateCPU(pid int) func() map[string]time.Duration {
	return func() map[string]time.Duration { return map[string]time.Duration{"restate": treeCPU(pid)} }
}
