package rpc

import (
	"fmt"
	"sync"

	"connectrpc.com/connect"
)

// DefaultStreamsPerCaller bounds the server streams (WatchTask, the A2A
// streams made of it, every other watch) one caller holds open on one
// process at once. Each holds a goroutine, a subscription and buffers
// until its client leaves, so a caller opening them without end would
// exhaust memory; a console or an agent needs a few.
const DefaultStreamsPerCaller = 64

// WithStreamsPerCaller replaces DefaultStreamsPerCaller; n < 1 is 1.
func WithStreamsPerCaller(n int) EdgeOption {
	return func(i *edgeInterceptor) { i.streams.max = max(n, 1) }
}

// streamCounts are the server streams each caller holds open.
type streamCounts struct {
	max  int
	mu   sync.Mutex
	open map[streamKey]int
}

// streamKey is a caller: a principal of one tenant.
type streamKey struct{ tenant, principal string }

func newStreamCounts() *streamCounts {
	return &streamCounts{max: DefaultStreamsPerCaller, open: map[streamKey]int{}}
}

// take counts one more stream of who, or refuses it when who holds the
// most already; release gives it back.
func (s *streamCounts) take(who Identity) (release func(), err error) {
	k := streamKey{who.Tenant, who.Principal}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[k] >= s.max {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s holds %d streams open, the most one caller may: close one first", who.Principal, s.max))
	}
	s.open[k]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.open[k]--; s.open[k] == 0 {
			delete(s.open, k)
		}
	}, nil
}
