package action_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/stewardtest"
)

func TestInlineIsBoundedByMaxInlineRequest(t *testing.T) {
	for _, c := range []struct {
		n    int
		want bool
	}{{0, false}, {1, true}, {action.MaxInlineRequest, true}, {action.MaxInlineRequest + 1, false}} {
		if got := action.Inline(c.n); got != c.want {
			t.Errorf("Inline(%d) = %v, want %v", c.n, got, c.want)
		}
	}
}

// TestRequestChecksTheHashInlineOrStored reads a request both ways it may
// come, and refuses either when it does not hash to the hash it should.
func TestRequestChecksTheHashInlineOrStored(t *testing.T) {
	e := stewardtest.NewEnv(t)
	ctx := context.Background()
	small := []byte(`{"params":{},"target":"t","task_id":"t1","tool":"noop","tool_version":"1"}`)
	large := []byte(`{"params":{"x":"` + strings.Repeat("a", action.MaxInlineRequest) + `"}}`)
	ref, largeHash, err := e.Requests.Put(ctx, "t1", large)
	if err != nil {
		t.Fatal(err)
	}
	smallHash := action.RequestHash(small)

	for _, c := range []struct {
		name   string
		inline []byte
		ref    string
		hash   string
		want   []byte
	}{
		{"inline", small, "", smallHash, small},
		{"stored", nil, ref, largeHash, large},
		{"inline with a ref too: the inline copy wins", small, ref, smallHash, small},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := e.Requests.Request(ctx, c.inline, c.ref, c.hash)
			if err != nil || !bytes.Equal(got, c.want) {
				t.Fatalf("Request = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	for _, c := range []struct {
		name   string
		inline []byte
		ref    string
		hash   string
	}{
		{"inline, tampered", []byte(`{"params":{"x":1}}`), "", smallHash},
		{"inline, another hash", small, "", largeHash},
		{"stored, another hash", nil, ref, smallHash},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, err := e.Requests.Request(ctx, c.inline, c.ref, c.hash); !errs.Is(err, errs.Corrupt) {
				t.Fatalf("Request = %q, %v; want Corrupt", got, err)
			}
		})
	}
}

// A request goes inline when it is at most MaxInlineRequest bytes.
func ExampleInline() {
	small, _ := action.Canonical(action.Request{TaskID: "t1", Tool: "search", ToolVersion: "1", Params: []byte(`{"q":"rent"}`)})
	large := make([]byte, action.MaxInlineRequest+1)
	fmt.Println(action.Inline(len(small)), action.Inline(len(large)))
	// Output: true false
}

// TestAStoredBlobStaysAsStored: once stored, a blob can be neither
// purged, deleted nor overwritten, by any writer of the bucket; storing
// the same bytes again, from this Store or another process's, is a
// success with the same reference.
func TestAStoredBlobStaysAsStored(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	s, err := action.OpenStore(ctx, bus.JS, bucket.Config{Name: "TEST_BLOBS"})
	if err != nil {
		t.Fatal(err)
	}
	ref, hash, err := s.Put(ctx, "t1", []byte(`{"ok":true}`))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := bus.JS.KeyValue(ctx, "TEST_BLOBS")
	if err != nil {
		t.Fatal(err)
	}
	key := action.Key("t1", hash)
	if err := kv.Purge(ctx, key); err == nil {
		t.Error("a purge of a stored blob was taken")
	}
	if err := kv.Delete(ctx, key); err == nil {
		t.Error("a delete of a stored blob was taken")
	}
	if _, err := kv.Put(ctx, key, []byte("other bytes")); err == nil {
		t.Error("other bytes were put over a stored blob")
	}
	if _, err := bus.JS.PublishMsg(ctx, &nats.Msg{Subject: "$KV.TEST_BLOBS.x", Header: nats.Header{"Nats-Rollup": {"all"}}}); err == nil {
		t.Error("a roll-up of the whole bucket was taken")
	}
	again, _, err := s.Put(ctx, "t1", []byte(`{"ok":true}`))
	if err != nil || again != ref {
		t.Fatalf("the same bytes again: %q, %v; want %q", again, err, ref)
	}
	other, err := action.OpenStore(ctx, bus.JS, bucket.Config{Name: "TEST_BLOBS"})
	if err != nil {
		t.Fatal(err)
	}
	if r, h, err := other.Put(ctx, "t1", []byte(`{"ok":true}`)); err != nil || r != ref || h != hash {
		t.Fatalf("another store's Put of the same bytes: %q %q %v; want %q %q", r, h, err, ref, hash)
	}
	if got, err := other.Get(ctx, ref, hash); err != nil || string(got) != `{"ok":true}` {
		t.Fatalf("another store's Get = %q, %v", got, err)
	}
}

// TestContentIsKeptPerTask: a task's content is under a key that names
// the task, so two tasks storing the same bytes hold two keys, each read
// by its own reference; a reference of the older form (the hash alone)
// still reads; a task id that is not one is refused before anything is
// stored.
func TestContentIsKeptPerTask(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	s, err := action.OpenStore(ctx, bus.JS, bucket.Config{Name: "TEST_TASKS"})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"same":"bytes"}`)
	refA, hash, err := s.Put(ctx, "task-a", data)
	if err != nil {
		t.Fatal(err)
	}
	refB, _, err := s.Put(ctx, "task-b", data)
	if err != nil {
		t.Fatal(err)
	}
	if want := "kv://TEST_TASKS/task-a." + hash; refA != want || refB == refA {
		t.Fatalf("refs %q and %q; want %q and another", refA, refB, want)
	}
	kv, err := bus.JS.KeyValue(ctx, "TEST_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"task-a", "task-b"} {
		if e, err := kv.Get(ctx, action.Key(task, hash)); err != nil || !bytes.Equal(e.Value(), data) {
			t.Errorf("key of %s: %v", task, err)
		}
	}
	old := []byte(`{"stored":"before archives"}`)
	oldHash := action.RequestHash(old)
	if _, err := kv.Create(ctx, oldHash, old); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string][]byte{refA: data, refB: data, "kv://TEST_TASKS/" + oldHash: old} {
		h := action.RequestHash(want)
		if got, err := s.Get(ctx, ref, h); err != nil || !bytes.Equal(got, want) {
			t.Errorf("Get(%s) = %q, %v", ref, got, err)
		}
	}
	if _, _, err := s.Put(ctx, "a.b", data); err == nil {
		t.Error("content of task \"a.b\" was stored: its key would be read as another task's")
	}
	if _, err := s.Get(ctx, "kv://OTHER/task-a."+hash, hash); !errs.Is(err, errs.Corrupt) {
		t.Errorf("a reference into another bucket: %v; want Corrupt", err)
	}
}

func TestParseRef(t *testing.T) {
	h := action.RequestHash([]byte("x"))
	for ref, want := range map[string]action.StoredRef{
		"kv://B/t1." + h: {Bucket: "B", TaskID: "t1", Hash: h},
		"kv://B/" + h:    {Bucket: "B", Hash: h},
	} {
		if got, err := action.ParseRef(ref); err != nil || got != want || got.String() != ref {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", ref, got, err, want)
		}
	}
	for _, bad := range []string{"", "s3://B/" + h, "kv://B/t1", "kv:///" + h, "kv://B/t.1." + h, "kv://B/t1." + h[1:], "kv://B/" + strings.ToUpper(h)} {
		if r, err := action.ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) = %+v; want an error", bad, r)
		}
	}
}
