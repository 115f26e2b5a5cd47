package archive_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestABucketRefusingPurgesKeepsItsContent: the results bucket was made
// refusing purges (before archives). PurgeContent purges the requests and
// policy inputs of a task the log no longer holds, leaves its results and
// says which bucket refused, each time, without an error; content stored
// under the hash alone (before keys named their task) stays too.
func TestABucketRefusingPurgesKeepsItsContent(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	if _, err := eventlog.Open(ctx, bus.JS, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.Open(ctx, bus.JS, bucket.Config{Name: action.ResultBucket, WriteOnce: true}); err != nil {
		t.Fatal(err) // as a version before archives made it: DenyPurge
	}
	requests, err := action.OpenStore(ctx, bus.JS, bucket.Config{Name: action.RequestBucket})
	if err != nil {
		t.Fatal(err)
	}
	results, err := action.OpenStore(ctx, bus.JS, bucket.Config{Name: action.ResultBucket})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := policystore.Open(ctx, bus.JS, bucket.Config{})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"archived":true}`)
	hash := action.RequestHash(data)
	reqRef, _, err := requests.Put(ctx, "gone", data)
	if err != nil {
		t.Fatal(err)
	}
	resRef, _, err := results.Put(ctx, "gone", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policy.PutInput(ctx, "gone", data); err != nil {
		t.Fatal(err)
	}
	reqKV, _ := bus.JS.KeyValue(ctx, action.RequestBucket)
	if _, err := reqKV.Create(ctx, hash, data); err != nil { // the older form
		t.Fatal(err)
	}
	p := archive.NewPurger(bus.JS)
	for range 2 {
		c, err := p.PurgeContent(ctx, []string{"gone"})
		if err != nil || len(c.Purged) != 1 || len(c.Refused) != 1 || c.Refused[0] != action.ResultBucket {
			t.Fatalf("PurgeContent = %+v, %v; want gone purged, %s refusing", c, err, action.ResultBucket)
		}
	}
	if _, err := requests.Get(ctx, reqRef, hash); err == nil {
		t.Error("the request is still stored")
	}
	if _, ok, err := policy.Input(ctx, "gone", hash); ok || err != nil {
		t.Errorf("the policy input: kept %v, %v; want purged", ok, err)
	}
	if got, err := results.Get(ctx, resRef, hash); err != nil || string(got) != string(data) {
		t.Errorf("the result in the bucket refusing purges: %q, %v; want kept", got, err)
	}
	if _, err := reqKV.Get(ctx, hash); errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Error("content under the hash alone was purged")
	}
}

// TestARunAfterACrashPurgesTheContentLeft: a run stopped after purging a
// tree's events and before its content. Its tasks have left the state
// plane's lists, so the next run finds them by the tree's pending mark:
// FinishPending purges the content of the task whose events are gone,
// keeps that of a task still on the log (marked by a run that stopped
// before its events' purge: archived again later), and removes both marks.
func TestARunAfterACrashPurgesTheContentLeft(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	if _, err := eventlog.Open(ctx, bus.JS, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	results, err := action.OpenStore(ctx, bus.JS, bucket.Config{Name: action.ResultBucket})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"left":"behind"}`)
	hash := action.RequestHash(data)
	refs := map[string]string{}
	for _, id := range []string{"crashed", "onlog"} {
		if refs[id], _, err = results.Put(ctx, id, data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bus.JS.Publish(ctx, eventlog.DefaultSubjectPrefix+".onlog.TaskCreated", []byte("x")); err != nil {
		t.Fatal(err)
	}
	a := archive.New(mustDir(t))
	for root, ids := range map[string][]string{"crashed": {"crashed"}, "onlog": {"onlog"}} {
		if err := a.MarkPending(ctx, root, ids); err != nil {
			t.Fatal(err)
		}
	}
	c, err := a.FinishPending(ctx, archive.NewPurger(bus.JS))
	if err != nil || len(c.Purged) != 1 || c.Purged[0] != "crashed" {
		t.Fatalf("FinishPending = %+v, %v; want crashed's content purged", c, err)
	}
	if _, err := results.Get(ctx, refs["crashed"], hash); err == nil {
		t.Error("the crashed tree's result is still stored")
	}
	if _, err := results.Get(ctx, refs["onlog"], hash); err != nil {
		t.Errorf("the result of a task still on the log: %v", err)
	}
	if left, err := a.Pending(ctx); err != nil || len(left) != 0 {
		t.Errorf("marks left: %v, %v", left, err)
	}
}

func mustDir(t *testing.T) archive.Store {
	t.Helper()
	d, err := archive.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
