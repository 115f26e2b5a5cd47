package e2e_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// planeConn is a connection to a dev server's NATS as one plane's user,
// with the seed dev keeps in its data directory, and what the server
// refused it.
type planeConn struct {
	plane string
	nc    *nats.Conn
	js    jetstream.JetStream

	mu      sync.Mutex
	refused []string
}

func (h *harness) connectAs(t *testing.T, plane string) *planeConn {
	t.Helper()
	c := &planeConn{plane: plane}
	nc, err := nats.Connect(h.natsURL, h.natsUser(t, plane), nats.CustomInboxPrefix(natsperm.Inbox(plane)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				c.mu.Lock()
				c.refused = append(c.refused, err.Error())
				c.mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

// refusedCount is how many permission violations the server sent c.
func (c *planeConn) refusedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.refused)
}

// forgedPayloads are events of the types a forger wants most: a decision,
// an approval, a credential, a budget, a permit, a claim, a dispatch, an
// outcome.
func forgedPayloads(actionID string) []event.Payload {
	now := timestamppb.Now()
	snap := &stewardv1.PolicySnapshot{SnapshotId: "snap-forged", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW, EvaluatedAt: now}
	return []event.Payload{
		&stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: snap},
		&stewardv1.ApprovalDecided{ActionId: actionID, DecidedBy: "forger"},
		&stewardv1.CredentialIssued{},
		&stewardv1.BudgetRaised{},
		&stewardv1.ActionPermitted{Snapshot: snap, Permit: &stewardv1.ActionPermit{PermitId: "permit-forged", ActionId: actionID, IssuedAt: now}},
		&stewardv1.ActionClaimed{ActionId: actionID},
		&stewardv1.ActionDispatched{ActionId: actionID},
		&stewardv1.ActionOutcomeRecorded{ActionId: actionID},
	}
}

// TestNATSRefusesWhatAPlaneDoesNotOwn connects to a running `steward dev`'s
// NATS as each plane, with the seeds dev keeps in its data directory, and
// tries every forgery of issue 15: each event type the plane does not own
// (governance's action.outcome among them), and appended as Append would,
// a policy decision, an approval, a credential, a budget raise, a permit,
// a claim and a dispatch; a write to a bucket the plane does not own; a
// purge, a stream delete and a consumer delete; a connection without a
// user. The server refuses each, and the admin finds the log and the
// consumers as they were. (A forged permit that reaches the log anyway —
// by a stolen governance key — is not executed: TestForgedPermitsAreNotExecuted.)
func TestNATSRefusesWhatAPlaneDoesNotOwn(t *testing.T) {
	h := startSteward(t, setup{nats: true})
	ctx := context.Background()
	id := h.create(t, "natsperm-1", contract())
	waitStarted(t, h.agent.clients, id)
	adminJS, stream := h.events(t)
	all := "steward.task." + id + ".>"
	before, err := stream.GetLastMsgForSubject(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msgsBefore := info.State.Msgs

	t.Run("no user", func(t *testing.T) {
		nc, err := nats.Connect(h.natsURL)
		if err == nil {
			nc.Close()
			t.Fatal("a connection without a user was accepted")
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("a connection without a user: %v, want an authorization violation", err)
		}
	})

	t.Run("planes", func(t *testing.T) {
		for _, plane := range natsperm.Planes() {
			t.Run(plane, func(t *testing.T) {
				t.Parallel()
				c := h.connectAs(t, plane)

				// Every type it does not own, on the live task's subject.
				refused := 0
				for _, typ := range event.Types() {
					if event.Owner(typ) == plane {
						continue
					}
					if err := c.nc.Publish(eventlog.ChainPrefix(typ)+"."+id+"."+typ, []byte("forged")); err != nil {
						t.Fatal(err)
					}
					refused++
				}
				if err := c.nc.Flush(); err != nil {
					t.Fatal(err)
				}
				stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
					return c.refusedCount() >= refused, strconv.Itoa(c.refusedCount()) + " of " + strconv.Itoa(refused) + " publications refused"
				})

				// The forgeries that matter, sealed and appended as Append would:
				// conditional on the task's head, acknowledged by JetStream.
				var wg sync.WaitGroup
				for _, p := range forgedPayloads("act-forged") {
					ev := stewardtest.Event(t, id, p)
					if event.Owner(ev.Type) == plane {
						continue
					}
					ev.Actor.Plane = plane // and it says so: the fold would refuse it anyway
					data, err := event.Seal(ev, nil)
					if err != nil {
						t.Fatal(err)
					}
					msg := &nats.Msg{Subject: "steward.task." + id + "." + ev.Type, Data: data, Header: nats.Header{
						jetstream.MsgIDHeader:                   []string{ev.EventId},
						jetstream.ExpectedLastSubjSeqHeader:     []string{strconv.FormatUint(before.Sequence, 10)},
						jetstream.ExpectedLastSubjSeqSubjHeader: []string{all},
					}}
					wg.Go(func() {
						pctx, cancel := context.WithTimeout(ctx, time.Second)
						defer cancel()
						if ack, err := c.js.PublishMsg(pctx, msg); err == nil {
							t.Errorf("%s forged %s: stored at %d", plane, ev.Type, ack.Sequence)
						}
					})
				}

				// A bucket it does not own.
				for bucket, owners := range map[string][]string{
					action.RequestBucket:      {event.PlaneControl},
					action.ResultBucket:       {event.PlaneControl, event.PlaneExecution},
					natsperm.ToolKVBucket:     {event.PlaneExecution},
					natsperm.ToolLimitsBucket: {event.PlaneExecution},
				} {
					owned := false
					for _, o := range owners {
						owned = owned || o == plane
					}
					if owned {
						continue
					}
					// A KV put is a JetStream publish to $KV.<bucket>.<key>.
					wg.Go(func() {
						pctx, cancel := context.WithTimeout(ctx, time.Second)
						defer cancel()
						if _, err := c.js.Publish(pctx, "$KV."+bucket+".forged-"+plane, []byte("forged")); err == nil {
							t.Errorf("%s wrote to %s", plane, bucket)
						}
						admin, err := adminJS.KeyValue(ctx, bucket)
						if err != nil {
							t.Errorf("%s: %v", bucket, err)
							return
						}
						if _, err := admin.Get(ctx, "forged-"+plane); !errors.Is(err, jetstream.ErrKeyNotFound) {
							t.Errorf("%s: the forged key is there (%v)", bucket, err)
						}
					})
				}

				// Erasing history or unhooking a plane.
				for name, call := range map[string]func(context.Context) error{
					"purge": func(ctx context.Context) error {
						s, err := c.js.Stream(ctx, eventlog.DefaultStream)
						if err != nil {
							return err
						}
						return s.Purge(ctx)
					},
					"stream delete": func(ctx context.Context) error { return c.js.DeleteStream(ctx, eventlog.DefaultStream) },
					"consumer delete": func(ctx context.Context) error {
						return c.js.DeleteConsumer(ctx, eventlog.DefaultStream, event.PlaneExecution)
					},
				} {
					wg.Go(func() {
						cctx, cancel := context.WithTimeout(ctx, time.Second)
						defer cancel()
						if call(cctx) == nil {
							t.Errorf("%s: %s answered", plane, name)
						}
					})
				}
				wg.Wait()
			})
		}
	})

	// The log is as it was, and so are the planes' consumers.
	after, err := stream.GetLastMsgForSubject(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if after.Sequence != before.Sequence {
		t.Errorf("the task's last event moved from %d to %d (%s)", before.Sequence, after.Sequence, after.Subject)
	}
	for _, typ := range event.Types() {
		if prefix := eventlog.ChainPrefix(typ); prefix != eventlog.DefaultSubjectPrefix {
			// A tool's or service's chain named like the task: nothing there.
			if msg, err := stream.GetLastMsgForSubject(ctx, prefix+"."+id+"."+typ); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Errorf("%s.%s.%s: %v, %v", prefix, id, typ, msg, err)
			}
		}
	}
	info, err = stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs < msgsBefore {
		t.Errorf("the stream holds %d messages, %d before", info.State.Msgs, msgsBefore)
	}
	for _, consumer := range []string{event.PlaneControl, event.PlaneGovernance, event.PlaneExecution} {
		if _, err := adminJS.Consumer(ctx, eventlog.DefaultStream, consumer); err != nil {
			t.Errorf("consumer %s: %v", consumer, err)
		}
	}
	// And the server still works for the planes themselves.
	if _, err := h.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: id, Reason: "after the forgeries", RequestId: "natsperm-pause"})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, h.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
}
