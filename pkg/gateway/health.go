package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// plane is a plane's replicas and which of them are up. Its replicas
// change as the names of its targets resolve anew (resolve.go).
type plane struct {
	name    string
	targets []*url.URL // as configured
	next    atomic.Uint64

	mu       sync.Mutex
	replicas []*replica
}

func newPlane(p Plane) *plane {
	pl := &plane{name: p.Name, targets: p.Replicas}
	for _, u := range p.Replicas {
		pl.replicas = append(pl.replicas, &replica{plane: p.Name, url: u, target: u})
	}
	return pl
}

// current returns the plane's replicas as they stand.
func (p *plane) current() []*replica {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.replicas
}

// replica is one process of a plane (or one address in front of
// several). It counts as down until a check or a call has reached it.
type replica struct {
	plane  string
	url    *url.URL
	target *url.URL // the configured URL it was resolved from

	mu      sync.Mutex
	checked bool // up or down has been found once
	up      bool
}

func (r *replica) isUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up
}

// set records whether the replica is up, and reports whether that changed.
func (r *replica) set(up bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := !r.checked || r.up != up
	r.checked, r.up = true, up
	return changed
}

func (p *plane) healthy() int {
	n := 0
	for _, r := range p.current() {
		if r.isUp() {
			n++
		}
	}
	return n
}

// order is the replicas in the order a call tries them: the healthy ones
// in turn, starting one further at each call, then the others, whose last
// check may be older than their recovery.
func (p *plane) order() []*replica {
	var up, down []*replica
	for _, r := range p.current() {
		if r.isUp() {
			up = append(up, r)
		} else {
			down = append(down, r)
		}
	}
	if len(up) > 1 {
		i := int(p.next.Add(1) % uint64(len(up)))
		up = append(up[i:], up[:i]...)
	}
	return append(up, down...)
}

// Run checks every replica now and then every CheckEvery until ctx ends.
func (g *Gateway) Run(ctx context.Context) {
	tick := time.NewTicker(g.cfg.CheckEvery)
	defer tick.Stop()
	for {
		g.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Check resolves the planes' targets anew, then asks every replica's
// HealthPath once, at the same time, and marks each up or down by its
// answer.
func (g *Gateway) Check(ctx context.Context) {
	probeCtx, cancel := context.WithTimeout(ctx, min(g.cfg.CheckEvery, 5*time.Second))
	defer cancel()
	for _, p := range g.planes {
		g.resolve(probeCtx, p)
	}
	var wg sync.WaitGroup
	for _, p := range g.planes {
		for _, r := range p.current() {
			wg.Go(func() {
				err := g.probe(probeCtx, r)
				if ctx.Err() != nil {
					return // the gateway is stopping, not the replica
				}
				if err != nil {
					g.markDown(r, err.Error())
				} else {
					g.markUp(r)
				}
			})
		}
	}
	wg.Wait()
}

// probe returns nil when r answers its HealthPath with 200.
func (g *Gateway) probe(ctx context.Context, r *replica) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url.JoinPath(HealthPath).String(), nil)
	if err != nil {
		return err
	}
	resp, err := g.cfg.Transport.RoundTrip(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", HealthPath, resp.Status)
	}
	return nil
}

func (g *Gateway) markUp(r *replica) {
	if r.set(true) {
		g.cfg.Logger.Info("gateway: replica up", "plane", r.plane, "url", r.url.String())
	}
}

func (g *Gateway) markDown(r *replica, reason string) {
	if r.set(false) {
		g.cfg.Logger.Warn("gateway: replica down", "plane", r.plane, "url", r.url.String(), "reason", reason)
	}
}
