package control_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestRequestInlineOrStored proposes a small and a large request: the
// small one travels in the proposal with no store entry, the large one is
// stored and named by request_ref; either way the hashes are the request's,
// and the compensation of each carries its original parameters.
func TestRequestInlineOrStored(t *testing.T) {
	for _, c := range []struct {
		name   string
		text   string
		inline bool
	}{
		{"small, inline", "a", true},
		{"large, stored", strings.Repeat("a", action.MaxInlineRequest), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newHarness(t)
			ctx := context.Background()
			id := r.runningTask(t, "inline", compensate, nil)
			a := r.propose(t, id, "w1", "write", "doc", map[string]any{"text": c.text})
			key := action.Ref(action.RequestBucket, id, a.RequestHash) // under its task
			_, stored := r.Requests.Get(ctx, key, a.RequestHash)
			if c.inline {
				if len(a.Request) == 0 || a.RequestRef != "" || action.RequestHash(a.Request) != a.RequestHash {
					t.Fatalf("ref %q, %d inline bytes; want the request inline and no ref", a.RequestRef, len(a.Request))
				}
				if !errs.Is(stored, errs.Corrupt) { // missing
					t.Fatalf("store has the inline request (%v); want no put", stored)
				}
			} else if len(a.Request) != 0 || a.RequestRef != key || stored != nil {
				t.Fatalf("ref %q, %d inline bytes, store %v; want it stored and named", a.RequestRef, len(a.Request), stored)
			}
			if got := task.FindAction(r.task(t, id), a.ActionId); got.RequestRef != a.RequestRef || !bytes.Equal(got.Request, a.Request) {
				t.Fatalf("ledger has ref %q and %d bytes, the answer %q and %d", got.RequestRef, len(got.Request), a.RequestRef, len(a.Request))
			}

			r.run(t, id, a.ActionId, succeeded(), []byte(`"ok"`), time.Now())
			if _, err := r.ctl.CancelTask(ctx, "ops", &stewardv1.CancelTaskRequest{TaskId: id}); err != nil {
				t.Fatal(err)
			}
			tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, a.ActionId) != nil })
			r.checkParams(t, compensationOf(tk, a.ActionId), tk, a.ActionId, `"ok"`)
		})
	}
}
