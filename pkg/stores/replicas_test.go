package stores_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/stores"
)

// TestRaiseFromOneReplicaToThree opens the stores at one replica on a
// three-node cluster, with a task's events and a stored request in them,
// raises every stream Steward keeps to three (as `steward nats-streams
// --replicas 3` does), and checks that each is at three, as is a durable
// consumer on the event stream, that a lower
// count does not lower it, and that, with the node that held the one
// replica stopped, the task's chain still verifies and the request still
// reads.
func TestRaiseFromOneReplicaToThree(t *testing.T) {
	cluster := stewardtest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js := cluster.Buses[0].JS
	set, err := stores.Open(ctx, js, stores.Config{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	stewardtest.Append(t, set.Log, "raise", &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}}, &stewardv1.TaskStarted{})
	ref, hash, err := set.Requests.Put(ctx, "raise", []byte(`{"q":"raised"}`))
	if err != nil {
		t.Fatal(err)
	}
	// A plane's durable consumer, made as React makes one (replicas
	// unset: the stream's), follows the stream to three.
	if _, err := js.CreateOrUpdateConsumer(ctx, eventlog.DefaultStream, jetstream.ConsumerConfig{Durable: "raise", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	held := leaderOf(t, cluster, js, eventlog.DefaultStream)

	raised, err := stores.Raise(ctx, js, natsperm.Streams(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raised {
		if r.Missing {
			continue
		}
		info, err := js.Stream(ctx, r.Stream)
		if err != nil {
			t.Fatal(err)
		}
		if r.From != 1 || r.To != 3 || info.CachedInfo().Config.Replicas != 3 {
			t.Errorf("%s: raised from %d to %d, its config says %d replicas; want 1 to 3", r.Stream, r.From, r.To, info.CachedInfo().Config.Replicas)
		}
	}
	for _, s := range []string{eventlog.DefaultStream, eventlog.DefaultDeadLetterStream, bucket.StreamName(action.RequestBucket), bucket.StreamName(action.ResultBucket)} {
		if !slices.ContainsFunc(raised, func(r stores.Raised) bool { return r.Stream == s && !r.Missing }) {
			t.Errorf("%s was not raised: %+v", s, raised)
		}
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		ci, err := js.Consumer(ctx, eventlog.DefaultStream, "raise")
		if err != nil {
			return false, err.Error()
		}
		return ci.CachedInfo().Cluster != nil && len(ci.CachedInfo().Cluster.Replicas) == 2, fmt.Sprintf("consumer config replicas %d, cluster %+v", ci.CachedInfo().Config.Replicas, ci.CachedInfo().Cluster)
	})
	lowered, err := stores.Raise(ctx, js, []string{eventlog.DefaultStream}, 1)
	if err != nil || lowered[0].To != 3 {
		t.Fatalf("Raise to 1 of a stream at 3: %+v, %v; want it left at 3", lowered, err)
	}

	// The node that held the one replica goes: the others have the data.
	cluster.StopNode(held)
	other := cluster.Buses[(held+1)%3].JS
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		// Each try bounded: while the streams elect new leaders, an API
		// request may go unanswered.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		after, err := stores.Open(ctx, other, stores.Config{Replicas: 3})
		if err != nil {
			return false, err.Error()
		}
		defer after.Close()
		raw, err := after.Log.ReadRaw(ctx, "raise")
		if err != nil {
			return false, err.Error()
		}
		var events [][]byte
		for _, r := range raw {
			events = append(events, r.Data)
		}
		if rep := audit.Verify("raise", events); rep.Break != nil || rep.Events != 2 {
			return false, fmt.Sprintf("the chain: %d events, break %v", rep.Events, rep.Break)
		}
		data, err := after.Requests.Get(ctx, ref, hash)
		return err == nil && string(data) == `{"q":"raised"}`, "the request: " + string(data)
	})
}

// leaderOf returns the index of the node that leads stream.
func leaderOf(t *testing.T, cluster *stewardtest.Cluster, js jetstream.JetStream, stream string) int {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if s.CachedInfo().Cluster.Leader == cluster.Name(i) {
			return i
		}
	}
	t.Fatalf("stream %s is led by %q, not a node of the cluster", stream, s.CachedInfo().Cluster.Leader)
	return -1
}
