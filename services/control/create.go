package control

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// CreateTask validates req and opens a task. With a request id it is
// idempotent: the task's id derives from the caller and the request id
// (TaskIDFor), so the same request again lands on the same task and
// returns it with created false; the request id used for anything else is
// AlreadyExists (see claimRequestID).
func (p *Plane) CreateTask(ctx context.Context, principal string, req *stewardv1.CreateTaskRequest) (_ *stewardv1.Task, _ bool, err error) {
	if err := validateCreate(req, p.now()); err != nil {
		return nil, false, err
	}
	contract, err := knownFieldsOnly(req.Contract)
	if err != nil {
		return nil, false, err
	}
	taskID, legacy, err := p.requestedTask(ctx, principal, req.RequestId)
	if err != nil {
		return nil, false, err
	}
	// Admitted before the request id is claimed, so that a refusal writes
	// nothing; a retry of a task made already is let through (admitTask)
	// and answered from the claim's record.
	tenant := rpc.Caller(ctx).Tenant
	done, err := p.admitTask(ctx, owner{tenant: tenant, principal: principal}, taskID)
	if err != nil {
		return nil, false, err
	}
	var t *stewardv1.Task
	var created bool
	defer func() { done(createdAt(t, created, err)) }()
	if !legacy {
		u, cerr := p.claimRequestIDFor(ctx, principal, requestid.CreateTask, taskID, req.RequestId, req, requestid.RecordedBy(p.exists(taskID)))
		if cerr != nil {
			return nil, false, cerr
		}
		defer u.settle(ctx, &err) // the named result: what CreateTask answers
	}
	// An objective's share of budget is reserved before the task is
	// written, and only once its duties are known to pass.
	if err = checkDuties(contract, principal, ""); err != nil {
		return nil, false, err
	}
	if err = p.objectives.join(ctx, principal, taskID, contract); err != nil {
		return nil, false, err
	}
	t, created, err = p.create(ctx, principal, tenant, taskID, req.RequestId, contract)
	return t, created, err
}

// admitTask admits a new running task of o (admit): a task that exists
// already, whose retry this is, is let through at a quota's end, to be
// answered as it was. When the log cannot say whether it exists, the
// quota's refusal stands.
func (p *Plane) admitTask(ctx context.Context, o owner, taskID string) (done func(seq uint64), err error) {
	done, err = p.quota.admitCreate(ctx, o, tally{running: 1}, taskID)
	if !errs.Is(err, errs.QuotaExceeded) {
		return done, err
	}
	if recs, rerr := p.log.Read(ctx, taskID); rerr == nil && len(recs) > 0 {
		return func(uint64) {}, nil
	}
	return nil, err
}

// createdAt is the sequence of t's creation when this command created it,
// else 0: what an admission's done is told (admit).
func createdAt(t *stewardv1.Task, created bool, err error) uint64 {
	if err != nil || !created {
		return 0
	}
	return t.LastSequence
}

// requestedTask returns the id of the task principal's requestID makes:
// derived from both (TaskIDFor), or the task olderTask finds (upcast.go;
// legacy), so that a retry across the upgrade finds it.
func (p *Plane) requestedTask(ctx context.Context, principal, requestID string) (id string, legacy bool, err error) {
	s := scopeOf(ctx, principal)
	if old, legacy, err := p.olderTask(ctx, s, principal, requestID); legacy || err != nil {
		return old, legacy, err
	}
	return TaskIDIn(s, requestID), false, nil
}

// exists reports whether taskID has been created: what a CreateTask under
// a request id records.
func (p *Plane) exists(taskID string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		recs, err := p.log.Read(ctx, taskID)
		return unsure(err) || len(recs) > 0
	}
}

// checkDuties refuses, under separation of duties, an acceptance owner, a
// named authorizer or an approval backup who creates the task or, for a sub-task, is its
// delegate: the fold refuses the owner's decision and governance the
// authorizer's approval, so say so now.
func checkDuties(c *stewardv1.TaskContract, creator, delegate string) error {
	if err := checkInputBackupDuty(c, creator, delegate); err != nil {
		return err
	}
	switch authorizer := c.AuthorizerRef; {
	case !c.SeparationOfDuties || authorizer == "":
	case authorizer == creator:
		return errs.Field("contract.authorizer_ref", "%s is creating the task; separation_of_duties needs someone else to approve its actions", errs.Quote(authorizer))
	case authorizer == delegate:
		return errs.Field("contract.authorizer_ref", "%s is the delegate who does the work; separation_of_duties needs someone else to approve its actions", errs.Quote(authorizer))
	}
	switch backup := c.ApprovalBackupRef; {
	case !c.SeparationOfDuties || backup == "":
	case backup == creator:
		return errs.Field("contract.approval_backup_ref", "%s is creating the task; separation_of_duties needs someone else to approve its actions", errs.Quote(backup))
	case backup == delegate:
		return errs.Field("contract.approval_backup_ref", "%s is the delegate who does the work; separation_of_duties needs someone else to approve its actions", errs.Quote(backup))
	}
	switch owner := c.AcceptanceOwnerRef; {
	case !c.SeparationOfDuties:
	case owner == creator:
		return errs.Field("contract.acceptance_owner_ref", "%s is creating the task; separation_of_duties needs someone else to accept it", errs.Quote(owner))
	case owner == delegate:
		return errs.Field("contract.acceptance_owner_ref", "%s is the delegate who does the work; separation_of_duties needs someone else to accept it", errs.Quote(owner))
	}
	return nil
}

// create opens a task of tenant with a checked contract; see CreateTask.
func (p *Plane) create(ctx context.Context, principal, tenant, taskID, requestID string, contract *stewardv1.TaskContract) (*stewardv1.Task, bool, error) {
	if err := checkDuties(contract, principal, ""); err != nil {
		return nil, false, err
	}
	contract.TaskId = taskID
	assigned, err := p.rollouts.assignRollouts(ctx, tenant, taskID, contract) // rollout_resolve.go
	if err != nil {
		return nil, false, err
	}
	created := &stewardv1.TaskCreated{Contract: contract, RequestId: requestID, Tenant: tenant, RolloutAssignments: assigned}
	ev, err := p.event(event.Meta{ID: event.ID(taskID, event.TypeTaskCreated), TaskID: taskID, Actor: p.actor(principal), CorrelationID: requestID}, created)
	if err != nil {
		return nil, false, err
	}
	return openTask(ctx, p.log, ev)
}

// openTask appends ev, the TaskCreated that opens a new task, and returns
// the task: created false when the task was there already, opened by the
// same command (a retry), and AlreadyExists when it was opened otherwise.
func openTask(ctx context.Context, log *eventlog.Log, ev *stewardv1.Event) (*stewardv1.Task, bool, error) {
	created, taskID := ev.GetTaskCreated(), ev.TaskId
	requestID := created.GetRequestId()
	rec, err := log.Append(ctx, eventlog.Head{}, ev)
	switch {
	case errors.Is(err, eventlog.ErrConflict):
		// The task exists: this is a repeat of an earlier request.
	case err != nil:
		return nil, false, err
	case rec.Event == ev:
		t := &stewardv1.Task{}
		if err := task.Apply(t, rec.Event, rec.Sequence); err != nil {
			return nil, false, err
		}
		return t, true, nil
	}
	// Compare with the creation event, not the folded task: later events
	// may change the contract the task carries.
	recs, err := log.Read(ctx, taskID)
	if err != nil {
		return nil, false, err
	}
	if len(recs) == 0 || !sameCreation(recs[0].Event.GetTaskCreated(), created) {
		return nil, false, errs.New(errs.AlreadyExists, "request_id %s already created task %s with a different contract", errs.Quote(requestID), taskID)
	}
	t, err := task.Fold(recs)
	return t, false, err
}

// sameCreation reports whether first created the task created would:
// the same tenant, contract and fork origin, what a repeated command must
// find.
func sameCreation(first, created *stewardv1.TaskCreated) bool {
	return first.GetTenant() == created.Tenant && proto.Equal(first.GetContract(), created.Contract) && proto.Equal(first.GetFork(), created.Fork)
}

// knownFieldsOnly copies c without fields this server does not know, which
// would otherwise be stored and hashed without anyone seeing them.
func knownFieldsOnly(c *stewardv1.TaskContract) (*stewardv1.TaskContract, error) {
	data, err := proto.Marshal(c)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "contract")
	}
	out := &stewardv1.TaskContract{}
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, out); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "contract")
	}
	return out, nil
}
