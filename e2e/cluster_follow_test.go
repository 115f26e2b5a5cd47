package e2e_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestFollowersAfterTheStreamLeadersNodeIsLost reproduces an open bug, so
// it runs only with STEWARD_CLUSTER_FOLLOW=1: a follower of the log (a
// plane's reader, such as control's usage count behind CreateTask)
// through each node of a three-node cluster, started anew a second after
// it fails as keepFollowing does; the stream leader's node is killed and
// events appended after. Every follower through a live node must reach
// the last event, and the one through the lost node once its client has
// reconnected. In 4 of 7 rounds the follower through the lost node did
// not within a minute: its client reconnected, and neither an error nor
// an event came (jetstream's ordered consumer waits on its consumer,
// which went with the node). A follower that is started anew on a
// reconnect caught up, yet in one of three rounds of that experiment a
// follower through a live node stayed behind too. TestClusterFaults
// failed once in six runs this way (control's usage reader).
//
//	STEWARD_CLUSTER_FOLLOW=1 go test -count=1 -run TestFollowersAfterTheStreamLeadersNodeIsLost -v ./e2e/
func TestFollowersAfterTheStreamLeadersNodeIsLost(t *testing.T) {
	if os.Getenv("STEWARD_CLUSTER_FOLLOW") == "" {
		t.Skip("reproduces an open bug; set STEWARD_CLUSTER_FOLLOW=1 to run it")
	}
	for round := range 3 {
		t.Run(fmt.Sprint(round+1), func(t *testing.T) { followThroughLeaderLoss(t, round) })
	}
}

func followThroughLeaderLoss(t *testing.T, round int) {
	c := stewardtest.StartCluster(t, 3, stewardtest.ClusterProcesses())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := eventlog.Open(ctx, c.Bus(0).JS, eventlog.Config{Replicas: 3}); err != nil {
		t.Fatal(err) // the stream
	}
	d := &clusterDeployment{cluster: c}
	leader := d.streamLeader(t, -1)
	var applied [3]atomic.Uint64
	for i := range 3 {
		nc, err := nats.Connect(c.ClientURL(i), nats.MaxReconnects(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		l, err := eventlog.Open(ctx, js, eventlog.Config{Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ctx.Err() == nil {
				err := l.FollowTypes(ctx, []string{event.TypeTaskCreated}, applied[i].Load(), func(rec *stewardv1.EventRecord) error {
					applied[i].Store(rec.Sequence)
					return nil
				}, nil)
				t.Logf("follower through %s: %v", c.Name(i), err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	w, err := eventlog.Open(ctx, c.Bus((leader+1)%3).JS, eventlog.Config{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var last uint64
	appendSome := func() {
		for range 20 {
			n++
			ev, err := event.New(event.Meta{TaskID: fmt.Sprintf("follow-%d-%d", round, n)}, &stewardv1.TaskCreated{})
			if err != nil {
				t.Fatal(err)
			}
			stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
				rec, err := w.Append(ctx, eventlog.Head{}, ev)
				if err != nil {
					return false, err.Error()
				}
				last = rec.Sequence
				return true, ""
			})
		}
	}
	appendSome()
	c.StopNode(leader)
	d.streamLeader(t, leader)
	appendSome()
	stewardtest.Eventually(t, time.Minute, func() (bool, string) {
		for i := range 3 {
			if got := applied[i].Load(); got < last {
				return false, fmt.Sprintf("the follower through %s is at %d, want %d (%s led the stream and was killed)", c.Name(i), got, last, c.Name(leader))
			}
		}
		return true, ""
	})
}
