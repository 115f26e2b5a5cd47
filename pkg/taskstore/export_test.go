package taskstore

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/raceguard"
)

// FoldInTwo folds recs[:n] into an entry and takes its history, then
// folds the rest into the same entry, as a later read does, so that the
// history shares the entry's id set. It returns that first history.
func FoldInTwo(recs []*stewardv1.EventRecord, n int) (History, error) {
	e := newEntry()
	if err := e.apply(recs[:n]...); err != nil {
		return nil, err
	}
	h := e.history()
	if err := e.apply(recs[n:]...); err != nil {
		return nil, err
	}
	return h, nil
}

// Cached reports whether s's cache keeps an entry for taskID.
func Cached(s *Store, taskID string) bool {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tasks[taskID] != nil
}

// GuardLent says whether this build checks that callers leave shared
// actions alone.
const GuardLent = raceguard.On

// ShallowTask is shallowTask, for the tests of package taskstore_test.
var ShallowTask = shallowTask
