package taskstore_test

import (
	"sync"

	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/taskstore"
)

// stores holds one store per log, as a process does (stores.Set), so that
// a test's reads and writes on one log share a cache.
var stores sync.Map

func tasksOf(log *eventlog.Log) *taskstore.Store {
	s, _ := stores.LoadOrStore(log, taskstore.New(log))
	return s.(*taskstore.Store)
}
