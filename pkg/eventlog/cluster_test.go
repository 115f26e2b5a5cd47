package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestTheChainCheckHoldsOnAReplicatedStream runs the per-task conditional
// append on a three-node cluster with the stream at three replicas. The
// writers connect to the two nodes that do not lead the stream, so the
// check that refuses a stale append is the stream leader's, made on the
// proposal, not anything a client or its node decides.
func TestTheChainCheckHoldsOnAReplicatedStream(t *testing.T) {
	cluster := stewardtest.StartCluster(t, 3)
	ctx := context.Background()
	cfg := eventlog.Config{Replicas: 3}
	logs := make([]*eventlog.Log, len(cluster.Buses))
	for i, bus := range cluster.Buses {
		l, err := eventlog.Open(ctx, bus.JS, cfg)
		if err != nil {
			t.Fatalf("open the log through node %d: %v", i+1, err)
		}
		logs[i] = l
	}
	leader := streamLeader(t, cluster)
	reader := logs[leader]
	followers := slices.Delete(slices.Clone(logs), leader, leader+1)
	a, b := followers[0], followers[1]

	created, err := a.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "r3"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	afterCreated := eventlog.Head{Sequence: created.Sequence, Hash: created.Event.Hash}
	started, err := a.Append(ctx, afterCreated, mustEvent(t, event.Meta{TaskID: "r3"}, &stewardv1.TaskStarted{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Append(ctx, afterCreated, mustEvent(t, event.Meta{TaskID: "r3"}, &stewardv1.TaskPaused{Reason: "stale"}))
	if !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("an append on task.paused from before task.started, through another node: %v, want a conflict", err)
	}

	// Two writers on different nodes append at the same head, each to a
	// type subject of its own: per round, exactly one is stored.
	head := eventlog.Head{Sequence: started.Sequence, Hash: started.Event.Hash}
	want := []string{created.Event.EventId, started.Event.EventId}
	const rounds = 20
	wins := make([]int, 2)
	payloads := []event.Payload{&stewardv1.TaskPaused{Reason: "a"}, &stewardv1.TaskResumed{}}
	for round := range rounds {
		var wg sync.WaitGroup
		recs := make([]*stewardv1.EventRecord, 2)
		fails := make([]error, 2)
		for w, l := range []*eventlog.Log{a, b} {
			ev := mustEvent(t, event.Meta{TaskID: "r3", ID: fmt.Sprint(round, "-", w)}, payloads[w])
			wg.Add(1)
			go func() {
				defer wg.Done()
				recs[w], fails[w] = l.Append(ctx, head, ev)
			}()
		}
		wg.Wait()
		var winner *stewardv1.EventRecord
		for w := range 2 {
			switch {
			case fails[w] == nil && winner == nil:
				winner = recs[w]
				wins[w]++
			case fails[w] == nil:
				t.Fatalf("round %d: both appends at seq %d were stored, as %d and %d", round, head.Sequence, recs[0].Sequence, recs[1].Sequence)
			case !errors.Is(fails[w], eventlog.ErrConflict):
				t.Fatalf("round %d, writer %d: %v, want a conflict or success", round, w, fails[w])
			}
		}
		if winner == nil {
			t.Fatalf("round %d: both appends at seq %d were refused: %v", round, head.Sequence, fails)
		}
		want = append(want, winner.Event.EventId)
		head = eventlog.Head{Sequence: winner.Sequence, Hash: winner.Event.Hash}
	}
	t.Logf("stream leader %s; wins per writer %v", cluster.Nodes[leader].Name(), wins)

	// The stream leader's node reads the chain back; Read verifies it.
	stored, err := reader.Read(ctx, "r3")
	if err != nil {
		t.Fatalf("the chain does not verify: %v", err)
	}
	var got []string
	for _, r := range stored {
		got = append(got, r.Event.EventId)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stored %v, want the winners %v", got, want)
	}
}

// streamLeader waits until the event stream has a leader and every replica
// is current, and returns the leader's index in cluster.Nodes.
func streamLeader(t *testing.T, cluster *stewardtest.Cluster) int {
	t.Helper()
	leader := -1
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		s, err := cluster.Buses[0].JS.Stream(context.Background(), eventlog.DefaultStream)
		if err != nil {
			return false, err.Error()
		}
		info, err := s.Info(context.Background())
		if err != nil {
			return false, err.Error()
		}
		cl := info.Cluster
		if cl == nil || cl.Leader == "" || len(cl.Replicas) != 2 {
			return false, fmt.Sprintf("stream cluster %+v", cl)
		}
		for _, r := range cl.Replicas {
			if !r.Current {
				return false, fmt.Sprintf("replica %s is not current", r.Name)
			}
		}
		for i, ns := range cluster.Nodes {
			if ns.Name() == cl.Leader {
				leader = i
			}
		}
		return leader >= 0, fmt.Sprintf("leader %s is not a node of the cluster", cl.Leader)
	})
	return leader
}

// TestReadsSeeEveryAcknowledgedAppend appends through one node and at
// once reads through a follower that hears its peers late (a route delayed
// on purpose), whose own replica answers a client of its node's direct
// gets first and has not applied the append yet. Every read must see it:
// the head of a chain is the leader's word, and a miss before it is asked
// of the leader (DESIGN, rule 9). Before reads took the leader's word,
// such a read found no task at all — "task not found" to the reaction that
// set task.created aside, and to a ProposeAction right after CreateTask.
func TestReadsSeeEveryAcknowledgedAppend(t *testing.T) {
	const lagging = 2
	cluster := stewardtest.StartCluster(t, 3, stewardtest.Lagging(lagging, 150*time.Millisecond))
	ctx := context.Background()
	logs := make([]*eventlog.Log, len(cluster.Buses))
	for i, bus := range cluster.Buses {
		l, err := eventlog.Open(ctx, bus.JS, eventlog.Config{Replicas: 3})
		if err != nil {
			t.Fatalf("open the log through node %d: %v", i+1, err)
		}
		logs[i] = l
	}
	leadFrom(t, cluster, 0)
	writer, reader := logs[1], logs[lagging]
	var short []string
	const rounds = 20
	for i := range rounds {
		id := fmt.Sprintf("fresh-%d", i)
		created, err := writer.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: id}, &stewardv1.TaskCreated{}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := reader.ReadAfter(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Sequence != created.Sequence {
			short = append(short, fmt.Sprintf("%s: %d events", id, len(got)))
		}
		last, err := reader.LastSequence(ctx, id)
		if err != nil || last != created.Sequence {
			short = append(short, fmt.Sprintf("%s: last sequence %d (%v), want %d", id, last, err, created.Sequence))
		}
	}
	if len(short) > 0 {
		t.Fatalf("%d reads right after an acknowledged append came back short, e.g. %v", len(short), short[:min(len(short), 5)])
	}
}

// leadFrom moves the event stream's leader to node i and waits until every
// replica is current.
func leadFrom(t *testing.T, cluster *stewardtest.Cluster, i int) {
	t.Helper()
	want := cluster.Nodes[i].Name()
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		if at := streamLeader(t, cluster); cluster.Nodes[at].Name() == want {
			return true, ""
		}
		body := fmt.Sprintf(`{"placement":{"preferred":%q}}`, want)
		_, err := cluster.Buses[i].JS.Conn().Request("$JS.API.STREAM.LEADER.STEPDOWN."+eventlog.DefaultStream, []byte(body), 5*time.Second)
		return false, fmt.Sprintf("asked the leader to step down for %s: %v", want, err)
	})
}
