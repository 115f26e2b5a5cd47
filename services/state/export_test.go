package state

// Waiting returns how many watches and waiting GetAction calls follow
// taskID: a test waits for a call to be waiting before it changes the
// task.
func (p *Plane) Waiting(taskID string) int {
	p.views.watchers.mu.Lock()
	defer p.views.watchers.mu.Unlock()
	return len(p.views.watchers.byTask[taskID])
}

// Looks returns how many times the watchdog has looked at the tasks.
func (p *Plane) Looks() uint64 { return p.looks.Load() }
