package stores_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/stores"
)

// earlierParse is how builds before per-task keys took a stored ref
// apart (action.Store.Get then): the bucket's prefix, then a key that is
// the content's hash itself, 64 lowercase hex digits.
func earlierParse(ref, bucket, hash string) bool {
	key, ok := strings.CutPrefix(ref, "kv://"+bucket+"/")
	return ok && key == hash && len(key) == 64 && strings.Trim(key, "0123456789abcdef") == ""
}

// TestSharedKeysWriteTheFormEarlierBuildsRead opens the stores wired with
// SharedKeys (steward --content-keys=shared), the process's own and a
// plane's (As), and checks that each writes requests, results and policy
// inputs under the hash alone, which an earlier build's parser accepts;
// and that stores wired either way read content written either way.
func TestSharedKeysWriteTheFormEarlierBuildsRead(t *testing.T) {
	ctx := context.Background()
	bus := stewardtest.StartBus(t)
	open := func(shared bool) *stores.Set {
		set, err := stores.Open(ctx, bus.JS, stores.Config{SharedKeys: shared,
			Writers: map[string]jetstream.JetStream{event.PlaneExecution: bus.JS, event.PlaneGovernance: bus.JS}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(set.Close)
		return set
	}
	shared, perTask := open(true), open(false)
	data := []byte(`{"x":"` + strings.Repeat("a", action.MaxInlineRequest) + `"}`)
	for _, set := range []*stores.Set{shared, shared.As(event.PlaneExecution)} {
		for _, s := range []struct {
			name      string
			w, across *action.Store
		}{{action.RequestBucket, set.Requests, perTask.Requests}, {action.ResultBucket, set.Results, perTask.Results}} {
			ref, hash, err := s.w.Put(ctx, "t1", data)
			if err != nil {
				t.Fatal(err)
			}
			if !earlierParse(ref, s.name, hash) || s.w.RefOf("t1", hash) != ref {
				t.Errorf("shared store wrote %s (RefOf %s): an earlier build reads only kv://%s/%s", ref, s.w.RefOf("t1", hash), s.name, hash)
			}
			taskRef, _, err := s.across.Put(ctx, "t2", data)
			if err != nil {
				t.Fatal(err)
			}
			if earlierParse(taskRef, s.name, hash) {
				t.Errorf("a store wired with task keys wrote %s, the shared form", taskRef)
			}
			for _, r := range []*action.Store{s.w, s.across} {
				for _, ref := range []string{ref, taskRef} {
					if got, err := r.Get(ctx, ref, hash); err != nil || !bytes.Equal(got, data) {
						t.Errorf("read %s: %v", ref, err)
					}
				}
			}
		}
	}
	for _, set := range []*stores.Set{shared, shared.As(event.PlaneGovernance)} {
		hash, err := set.Policy.PutInput(ctx, "t3", []byte(`{"input":1}`))
		if err != nil {
			t.Fatal(err)
		}
		// An earlier build read input.<hash>; this one reads it for any task.
		if got, ok, err := perTask.Policy.Input(ctx, "", hash); err != nil || !ok || string(got) != `{"input":1}` {
			t.Errorf("the shared input is not at input.<hash>: %q %v %v", got, ok, err)
		}
	}
}
