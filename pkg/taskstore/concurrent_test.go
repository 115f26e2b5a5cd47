package taskstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// TestConcurrentWritersAgreeWithTheLog: writers on one task through
// Write, Update and UpdateFrom, with readers that change the copies they
// are given, leave the cached fold equal to a fold of the log, with each
// event id stored once (run with -race).
func TestConcurrentWritersAgreeWithTheLog(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	log, err := eventlog.Open(ctx, bus.JS, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const id = "busy"
	stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}}, &stewardv1.TaskStarted{})

	newEvent := func(eventID string, p event.Payload) *stewardv1.Event {
		ev, err := event.New(event.Meta{ID: eventID, TaskID: id, Actor: &stewardv1.Actor{Principal: stewardtest.Principal}}, p)
		if err != nil {
			panic(err)
		}
		ev.Actor.Plane = event.Owner(ev.Type)
		return ev
	}
	spend := func(w, i int) taskstore.Build {
		return func(*stewardv1.Task) (*stewardv1.Event, error) {
			return newEvent(fmt.Sprintf("spend-%d-%d", w, i), &stewardv1.BudgetConsumed{Tokens: 1}), nil
		}
	}
	toggle := func(t *stewardv1.Task) (*stewardv1.Event, error) {
		switch t.Status {
		case stewardv1.TaskStatus_TASK_STATUS_RUNNING:
			return newEvent("", &stewardv1.TaskPaused{Reason: "toggle"}), nil
		case stewardv1.TaskStatus_TASK_STATUS_PAUSED:
			return newEvent("", &stewardv1.TaskResumed{Reason: "toggle"}), nil
		}
		return nil, nil
	}

	const writers, rounds = 6, 15
	var wg sync.WaitGroup
	errc := make(chan error, writers*rounds*4)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				switch w % 3 {
				case 0:
					if err := tasksOf(log).Write(ctx, id, spend(w, i)); err != nil {
						errc <- err
					}
					if err := tasksOf(log).Write(ctx, id, toggle); err != nil {
						errc <- err
					}
				case 1:
					got, err := tasksOf(log).Update(ctx, id, spend(w, i))
					if err != nil {
						errc <- err
						continue
					}
					got.Status = stewardv1.TaskStatus_TASK_STATUS_FAILED // ours to change
					got.Actions = append(got.Actions, &stewardv1.Action{ActionId: "mine"})
					_ = proto.Size(got)
				case 2:
					cur, _, err := tasksOf(log).Load(ctx, id)
					if err != nil {
						errc <- err
						continue
					}
					after, err := tasksOf(log).UpdateFrom(ctx, cur, spend(w, i))
					if err != nil {
						errc <- err
						continue
					}
					// The same event again, from the task after it.
					if _, err := tasksOf(log).UpdateFrom(ctx, after, spend(w, i)); err != nil {
						errc <- err
					}
					after.StatusReason = "changed by its owner"
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}

	recs, err := log.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.Event.EventId] {
			t.Errorf("event %s is stored twice", r.Event.EventId)
		}
		seen[r.Event.EventId] = true
	}
	want, err := task.Fold(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := tasksOf(log).Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("the cached fold differs from a fold of the log:\n got %v\nwant %v", got, want)
	}
	if tokens := want.BudgetUsed.GetTokens(); tokens != writers*rounds {
		t.Fatalf("%d tokens spent, want %d (one per spend)", tokens, writers*rounds)
	}
}
