package stewardtest

// Calls is how many call requests the tool got, on every path.
func (t *Tool) Calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.perPath {
		n += c
	}
	return n
}

// CallsTo is how many call requests went to path.
func (t *Tool) CallsTo(path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.perPath[path]
}

// CallsFor is how many call requests carried key.
func (t *Tool) CallsFor(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.perKey[key]
}

// Executions is how many times the tool did the work for key.
func (t *Tool) Executions(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, w := range t.worked {
		if w.Key == key {
			n++
		}
	}
	return n
}

// Worked returns the work done, in order.
func (t *Tool) Worked() []Work {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Work(nil), t.worked...)
}

// Asks is how many status queries asked about key.
func (t *Tool) Asks(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.asks[key]
}

// Requests returns every request the tool got, in order.
func (t *Tool) Requests() []Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Request(nil), t.requests...)
}
