package calltoken

import (
	"sync"
	"time"
)

// ReplayCache remembers the tokens a tool took. Tools that run several
// replicas share one (a store all replicas reach, such as a key with a
// TTL, set only if absent).
type ReplayCache interface {
	// First reports whether id is new, and remembers it until until.
	First(id string, until, now time.Time) bool
}

// MemoryReplayCache is a ReplayCache in this process's memory: enough for
// a tool of one replica. It forgets a token once the token has expired,
// so it holds at most the tokens of a few minutes of calls.
type MemoryReplayCache struct {
	mu        sync.Mutex
	seen      map[string]time.Time
	nextPrune time.Time
}

// NewMemoryReplayCache returns an empty cache.
func NewMemoryReplayCache() *MemoryReplayCache {
	return &MemoryReplayCache{seen: map[string]time.Time{}}
}

// First implements ReplayCache.
func (m *MemoryReplayCache) First(id string, until, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.After(m.nextPrune) {
		for k, u := range m.seen {
			if now.After(u) {
				delete(m.seen, k)
			}
		}
		m.nextPrune = now.Add(time.Minute)
	}
	if _, ok := m.seen[id]; ok {
		return false
	}
	m.seen[id] = until
	return true
}
