package execution_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/egress"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
	"github.com/steward-run/steward/services/execution/limit"
)

// harness is an execution plane on the kit's environment, fed permits written
// onto the log in the control and governance planes' stead.
type harness struct {
	*stewardtest.Env
	t     *testing.T
	cfg   execution.Config
	plane *execution.Plane
	// logger, when set, is the plane's logger from the next start on.
	logger *slog.Logger
	// beforeClaim, when set, runs before each claim from the next start on.
	beforeClaim func()
}

// newHarness starts an execution plane named w1, with a short lease, and a
// stand-in for governance. Tenants' tools may call loopback, where the
// kit's tools listen, as --tool-egress-allow 127.0.0.0/8 lets them.
func newHarness(t *testing.T, br breaker.Config) *harness {
	t.Helper()
	env := stewardtest.NewEnv(t)
	b := &harness{Env: env, t: t, cfg: execution.Config{
		Tasks: env.Tasks, Tools: env.Tools, Requests: env.Requests, Results: env.Results, Timers: env.Timers, Worker: "w1",
		Adapters: adapter.Set{HTTP: adapter.NewHTTP(nil)}, Breaker: br, Lease: 600 * time.Millisecond,
		Limits: openGate(t, env.Bus.JS),
		Egress: egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}),
	}}
	b.standInGovernance()
	b.start()
	return b
}

// openGate opens the tools' limits over js, as the binary does.
func openGate(t *testing.T, js jetstream.JetStream) *limit.Gate {
	t.Helper()
	kv, err := bucket.Open(context.Background(), js, limit.BucketConfig(1, nil))
	if err != nil {
		t.Fatal(err)
	}
	return limit.New(kv)
}

// callPath is where the harness's tools take calls.
const callPath = "/call"

// startTool starts the kit's tool, answering calls to callPath as script
// says, then OK. It does the work on every call that works, key or no
// key, so that Executions counts every call the plane made twice.
func startTool(t *testing.T, script ...stewardtest.Answer) *stewardtest.Tool {
	return stewardtest.StartTool(t).IgnoreKeys().Script(callPath, script...)
}

// standInGovernance answers every revalidation as a governance plane whose
// policy still allows the action would: a new snapshot and a new permit.
// What the real governance plane decides on revalidation is tested with
// both planes in e2e (revalidation_planes_test.go).
func (b *harness) standInGovernance() {
	sub, err := b.Log.React(context.Background(), "test-governance", eventlog.OnRecord[*stewardv1.ActionRevalidating](func(ctx context.Context, rec *stewardv1.EventRecord) error {
		r := rec.Event.GetActionRevalidating()
		t, _, err := b.Tasks.Load(ctx, rec.Event.TaskId)
		if err != nil {
			return err
		}
		a := task.FindAction(t, r.ActionId)
		if a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING || a.Permit.GetPermitId() != r.PermitId {
			return nil
		}
		snap := &stewardv1.PolicySnapshot{SnapshotId: "s-" + r.PermitId, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}
		pm := &stewardv1.ActionPermit{
			PermitId: r.PermitId + "-r", ActionId: a.ActionId, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: snap.SnapshotId, IssuedAt: timestamppb.Now(),
		}
		for _, p := range []event.Payload{&stewardv1.PolicyEvaluated{ActionId: a.ActionId, Snapshot: snap}, &stewardv1.ActionPermitted{Permit: pm}} {
			// Ids of their own, so that a redelivery records nothing twice.
			ev, err := event.New(event.Meta{ID: event.ID(rec.Event.EventId, fmt.Sprintf("%T", p)), TaskID: rec.Event.TaskId, Actor: &stewardv1.Actor{Principal: stewardtest.Principal, Plane: "governance"}}, p)
			if err != nil {
				return err
			}
			if _, err := b.Tasks.Update(ctx, rec.Event.TaskId, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil }); err != nil && !errs.Is(err, errs.FailedPrecondition) {
				return err
			}
		}
		return nil
	}))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(sub.Stop)
}

// start runs a fresh plane, as a restarted process would.
func (b *harness) start() {
	b.t.Helper()
	logger := b.logger
	if logger == nil {
		logger = b.Logger
	}
	var opts []execution.Option
	if b.beforeClaim != nil {
		opts = append(opts, execution.BeforeClaim(b.beforeClaim))
	}
	p, err := execution.New(b.Log, logger, b.cfg, opts...)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	b.plane = p
	b.t.Cleanup(p.Stop)
}

// register records a tool named name served by ts on callPath, with or
// without its status query, as edit leaves its contract.
func (b *harness) register(ts *stewardtest.Tool, name string, statusQuery bool, edit func(*stewardv1.ToolContract)) {
	b.t.Helper()
	c := ts.Contract(name, callPath)
	if !statusQuery {
		c.StatusQuery, c.GetHttp().StatusUrl = false, ""
	}
	if edit != nil {
		edit(c)
	}
	if _, _, err := b.plane.Register(context.Background(), "", "test", c); err != nil {
		b.t.Fatal(err)
	}
}

// permit opens a running task with one permitted action for tool, with
// events before recorded just before the permit, and returns the task and
// action ids.
func (b *harness) permit(taskID, tool, target string, before ...event.Payload) (string, string) {
	b.t.Helper()
	return b.permitUnder(&stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{tool}}, tool, target, before...)
}

// permitUnder is permit for a task with contract k.
func (b *harness) permitUnder(k *stewardv1.TaskContract, tool, target string, before ...event.Payload) (string, string) {
	b.t.Helper()
	b.Append(k.TaskId, &stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{})
	a, permitted := b.allow(k.TaskId, "p1", tool, target)
	b.Append(k.TaskId, append(before, permitted)...)
	return k.TaskId, a.ActionId
}

// allow records action pid of the task, for tool on target, proposed and
// evaluated (allowed), and returns it with the permit that lets it run,
// for the test to record.
func (b *harness) allow(taskID, pid, tool, target string) (*stewardv1.Action, *stewardv1.ActionPermitted) {
	b.t.Helper()
	a := b.ProposedAction(taskID, pid, tool, target)
	snapshot := "s-" + pid
	b.Append(taskID, &stewardv1.ActionProposed{Action: a},
		&stewardv1.PolicyEvaluated{ActionId: a.ActionId, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: snapshot, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
	return a, &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{
		PermitId: "pm-" + a.ActionId, ActionId: a.ActionId, ActionHash: a.ActionHash, RequestHash: a.RequestHash, SnapshotId: snapshot, IssuedAt: timestamppb.Now(),
	}}
}

func status(s stewardv1.ActionStatus) func(*stewardv1.Action) bool {
	return func(a *stewardv1.Action) bool { return a.GetStatus() == s }
}

// timer says whether the timer stream holds a timer of kind at stage:
// "at" while it is set and not yet due, "fired" once it came due, "*"
// either.
func (b *harness) timer(stage, kind string) bool {
	b.t.Helper()
	ctx := context.Background()
	s, err := b.JS.Stream(ctx, b.Timers.StreamOf(timer.Owner(kind)))
	if err != nil {
		b.t.Fatal(err)
	}
	_, err = s.GetLastMsgForSubject(ctx, b.Timers.Filter(stage, kind))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false
	} else if err != nil {
		b.t.Fatal(err)
	}
	return true
}
