package stewardtest

// Overlap is proven by the tool, not by timing: Gather holds a path's
// calls until enough distinct keys are in flight at once, and Together
// reports the most that ever were.

// gathering holds a path's calls until n distinct keys are in flight.
type gathering struct {
	n   int
	met chan struct{}
}

// Gather holds every call to path, after its work, until calls carrying n
// distinct keys are in flight at once; from then on its calls answer at
// once. A call whose caller gives up first ends as the caller leaves.
func (t *Tool) Gather(path string, n int) *Tool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gathers[path] = &gathering{n: n, met: make(chan struct{})}
	return t
}

// Together is the most distinct keys whose calls to path were in flight
// at the same time.
func (t *Tool) Together(path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.together[path]
}

// enter counts a call to path with key in flight and returns what it
// waits for before answering (nil: nothing); t.mu is held.
func (t *Tool) enter(path, key string) <-chan struct{} {
	keys := t.inFlight[path]
	if keys == nil {
		keys = map[string]int{}
		t.inFlight[path] = keys
	}
	keys[key]++
	t.together[path] = max(t.together[path], len(keys))
	g := t.gathers[path]
	if g == nil {
		return nil
	}
	if len(keys) >= g.n {
		select {
		case <-g.met:
		default:
			close(g.met)
		}
	}
	return g.met
}

// leave ends a call to path with key.
func (t *Tool) leave(path, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := t.inFlight[path]
	if keys[key]--; keys[key] == 0 {
		delete(keys, key)
	}
}
