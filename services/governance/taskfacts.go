package governance

import (
	"encoding/binary"
	"sync"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// taskFacts is what policy sees of a task (input.task: its contract and
// status), made ready once.
type taskFacts struct{ ready }

// newTaskFacts is what policy sees of t.
func newTaskFacts(t *stewardv1.Task) (taskFacts, error) {
	facts, err := protoFacts(t.Contract.ProtoReflect())
	if err != nil {
		return taskFacts{}, err
	}
	facts["status"] = t.Status.String()
	r, err := readyOf(facts)
	return taskFacts{r}, err
}

// maxCachedTasks bounds taskFactsCache: about 12 kB a task of a typical
// contract (BenchmarkPolicyInput's), so some 6 MB at most, for the tasks
// proposing at once; past it a task's facts are built again, as they
// were before the cache.
const maxCachedTasks = 512

// taskFactsCache keeps taskFacts by what they are made of, the contract's
// wire form and the status: a task's proposals share them until its
// contract is amended or its status changes, and building them (facts,
// canonical JSON, OPA's value) cost more than the rest of the input. A
// contract that does not marshal (invalid UTF-8) is not cached. Safe for
// concurrent use.
type taskFactsCache struct {
	mu     sync.Mutex
	byForm map[string]taskFacts // status, contract's deterministic wire form → facts
	keys   sync.Pool            // *[]byte, for the key of a lookup
}

func (c *taskFactsCache) of(t *stewardv1.Task) (taskFacts, error) {
	buf, _ := c.keys.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	defer c.keys.Put(buf)
	// The status as a varint, which ends itself, then the contract.
	key, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(binary.AppendVarint((*buf)[:0], int64(t.Status)), t.Contract)
	if err != nil {
		return newTaskFacts(t) // which says why
	}
	*buf = key
	c.mu.Lock()
	f, ok := c.byForm[string(key)] // no copy of key to look up
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	if f, err = newTaskFacts(t); err != nil {
		return taskFacts{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byForm == nil {
		c.byForm = map[string]taskFacts{}
	}
	if len(c.byForm) >= maxCachedTasks {
		for k := range c.byForm { // any one: the map's order is random
			delete(c.byForm, k)
			break
		}
	}
	c.byForm[string(key)] = f
	return f, nil
}
