package natsperm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/policystore"
)

// TestOnlyTheArchiverPurgesContent: two tasks hold the same bytes in the
// request, result and policy buckets, each under its own key. No plane may
// purge a bucket; the archiver purges the content of the task whose events
// are gone, all three buckets' of it, and leaves the live task's, whose
// events are on the log, even when asked for it.
func TestOnlyTheArchiverPurgesContent(t *testing.T) {
	s := startServer(t)
	st, admin := openStores(t, s)
	ctx := context.Background()
	data := []byte(`{"same":"bytes in both tasks"}`)
	hash := action.RequestHash(data)
	for _, task := range []string{"gone", "live"} {
		if _, _, err := st.Requests.Put(ctx, task, data); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Results.Put(ctx, task, data); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Policy.PutInput(ctx, task, data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.js.Publish(ctx, eventlog.DefaultSubjectPrefix+".live."+event.TypeTaskCreated, []byte("live")); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{action.RequestBucket: "%s." + hash, action.ResultBucket: "%s." + hash, policystore.Bucket: "input.%s." + hash}
	holds := func(task string) (n int) {
		for b, form := range keys {
			key := fmt.Sprintf(form, task)
			if _, err := bucket.Latest(ctx, admin.js, b, key); err == nil {
				n++
			} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
				t.Fatal(err)
			}
		}
		return n
	}
	for _, plane := range natsperm.Planes() {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := archive.NewPurger(s.connect(t, plane).js).PurgeContent(pctx, []string{"gone"}); err == nil {
			t.Errorf("the %s plane purged a task's content", plane)
		}
		cancel()
	}
	if holds("gone") != 3 {
		t.Fatal("a plane's purge took a task's content")
	}
	c, err := archive.NewPurger(s.connect(t, natsperm.Archiver).js).PurgeContent(ctx, []string{"gone", "live"})
	if err != nil || len(c.Purged) != 1 || c.Purged[0] != "gone" || len(c.Refused) != 0 {
		t.Fatalf("the archiver's purge: %+v, %v; want gone's content purged", c, err)
	}
	if g, l := holds("gone"), holds("live"); g != 0 || l != 3 {
		t.Errorf("after the purge the buckets hold %d keys of gone, %d of live; want 0, 3", g, l)
	}
	if got, err := st.Results.Get(ctx, action.Ref(action.ResultBucket, "live", hash), hash); err != nil || string(got) != string(data) {
		t.Errorf("the live task's result: %q, %v", got, err)
	}
}
