package taskstore

import "github.com/steward-run/steward/pkg/eventlog"

// Store reads and writes the tasks of one log, keeping the fold of the
// tasks it used last (cache) so that a read or a write reads only what is
// new. A process opens one per log (stores.Set) and every plane in it
// that folds tasks shares it: a write folded by one plane is then
// current for the next, which is what makes consecutive writes cheap.
type Store struct {
	log   *eventlog.Log
	cache *cache
}

// New returns the store of log's tasks, its cache empty.
func New(log *eventlog.Log) *Store { return &Store{log: log, cache: newCache()} }

// Log is the log the store reads and writes.
func (s *Store) Log() *eventlog.Log { return s.log }
