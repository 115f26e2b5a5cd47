package control

import (
	"context"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control/plandriver"
)

// MaxDelegationDepth is how many hands a task may pass through: a
// sub-task of a sub-task … this many deep, and no deeper.
const MaxDelegationDepth = 16

// DelegateTask opens a sub-task of req.ParentTaskId for req.DelegateRef
// whose contract keeps or narrows the parent's credential: its tools and
// scopes among the parent's, its budget and deadline within it. A budget
// cap it leaves unset is the parent credential's, written into the
// sub-task's contract so that the budget guard holds it there too; an
// unset deadline is the parent credential's expiry, through the sub-task's
// credential. Steward sets parent_task_id and the delegation chain (the
// parent's, plus this hop); governance issues the sub-task's credential
// from its parent's when it sees the task created.
//
// The parent must exist, must not have ended, and must hold a credential
// that is neither revoked (nor any ancestor's) nor expired. Nothing is
// appended when the delegation is refused. With a request id it is
// idempotent as CreateTask is: the same request again returns the same
// sub-task with created false, even if the parent has ended since. A
// request id may not start with plandriver.Prefix, which names the sub-tasks of
// a plan's steps (planSubTaskID).
func (dg *delegation) DelegateTask(ctx context.Context, principal string, req *stewardv1.DelegateTaskRequest) (_ *stewardv1.Task, _ bool, err error) {
	now := dg.now()
	if err := validateDelegate(req, now); err != nil {
		return nil, false, err
	}
	if strings.HasPrefix(req.RequestId, plandriver.Prefix) {
		return nil, false, errs.Field("request_id", "%s starts with %s, which is reserved for the sub-tasks Steward delegates for the steps of a plan", errs.Quote(req.RequestId), errs.Quote(plandriver.Prefix))
	}
	contract, err := knownFieldsOnly(req.Contract)
	if err != nil {
		return nil, false, err
	}
	parent, _, err := dg.tasks.Load(ctx, req.ParentTaskId)
	if err != nil {
		return nil, false, err
	}
	childID, legacy, err := dg.requestedTask(ctx, principal, req.RequestId)
	if err != nil {
		return nil, false, err
	}
	if !legacy {
		// What a delegation records: its reservation on the parent, then
		// the sub-task.
		recorded := func(ctx context.Context) bool {
			_, h, err := dg.tasks.Load(ctx, req.ParentTaskId)
			return unsure(err) || (err == nil && h.Has(reserveID(req.ParentTaskId, childID))) || dg.exists(childID)(ctx)
		}
		u, cerr := dg.claimRequestIDFor(ctx, principal, requestid.DelegateTask, req.ParentTaskId, req.RequestId, req, requestid.RecordedBy(recorded))
		if cerr != nil {
			return nil, false, cerr
		}
		defer u.settle(ctx, &err) // the named result: what DelegateTask answers
	}
	return dg.delegate(ctx, principal, parent, handoff{childID: childID, requestID: req.RequestId, delegateRef: req.DelegateRef, contract: contract, quota: true}, now)
}

// handoff is one delegation: the sub-task's id, the request id that names
// it ("" for none: a random id), who it is for, and its contract, checked
// as a client's (validateClientContract) with unknown fields dropped.
// still, if not nil, must hold on the parent when its budget is reserved
// (reserve): a plan's step still stands as the driver read it.
type handoff struct {
	childID, requestID, delegateRef string
	contract                        *stewardv1.TaskContract
	still                           func(parent *stewardv1.Task) error
	// quota says the sub-task is admitted under the running-task quotas
	// (DelegateTask's); a plan's sub-task step is not refused half-way
	// through its plan, and is counted all the same.
	quota bool
}

// delegate makes sub-task h of parent in principal's name, once its id is
// known: DelegateTask's, from the caller's request id, and a plan's
// sub_task step's (planSubTaskID). A sub-task with a request id made
// already is a retry, answered as it was.
func (dg *delegation) delegate(ctx context.Context, principal string, parent *stewardv1.Task, h handoff, now time.Time) (*stewardv1.Task, bool, error) {
	parentID, contract := parent.Contract.GetTaskId(), h.contract
	prior, err := dg.priorDelegation(ctx, h.childID, h.requestID, parentID)
	if err != nil {
		return nil, false, err
	}
	if prior == nil {
		// A retry of a delegation already made is answered as it was;
		// only a new one must find the parent fit to delegate.
		if err := dg.mayDelegate(ctx, parent, now); err != nil {
			return nil, false, err
		}
	}
	pc, err := delegable(contract, principal, h.delegateRef, parent)
	if err != nil {
		return nil, false, err
	}
	hop := &stewardv1.Delegation{FromRef: pc.Principal, ToRef: h.delegateRef, CredentialRef: pc.CredentialId, DelegatedAt: timestamppb.New(now)}
	if prior != nil {
		// The same request again: the same hop, so the contract compares
		// equal and the existing sub-task is returned.
		hop.DelegatedAt = prior.DelegatedAt
	}
	contract.ParentTaskId = parentID
	if err := inheritObjective(contract, parent); err != nil {
		return nil, false, err
	}
	contract.DelegationChain = append(slices.Clone(parent.Contract.GetDelegationChain()), hop)
	if n := len(contract.DelegationChain); n > MaxDelegationDepth {
		return nil, false, errs.New(errs.FailedPrecondition, "parent task %s is already %d delegations deep; the limit is %d", parentID, n-1, MaxDelegationDepth)
	}
	done := func(uint64) {}
	if h.quota && prior == nil {
		if done, err = dg.admitTask(ctx, owner{tenant: parent.Tenant, principal: principal}, h.childID); err != nil {
			return nil, false, err
		}
	}
	var t *stewardv1.Task
	var created bool
	defer func() { done(createdAt(t, created, err)) }()
	// Everything is checked before the reservation, the one write on the
	// parent, so that a refused delegation writes nothing.
	if err := dg.reserve(ctx, principal, parentID, h.childID, contract, pc, h.still); err != nil {
		return nil, false, err
	}
	t, created, err = dg.create(ctx, principal, parent.Tenant, h.childID, h.requestID, contract)
	if errs.Is(err, errs.AlreadyExists) && prior == nil {
		// The same request at the same moment made the sub-task first,
		// with its own delegated_at: answer with that one.
		if prior, perr := dg.priorDelegation(ctx, h.childID, h.requestID, parentID); perr == nil && prior != nil {
			hop.DelegatedAt = prior.DelegatedAt
			return dg.create(ctx, principal, parent.Tenant, h.childID, h.requestID, contract)
		}
	}
	return t, created, err
}

// delegable checks contract as a delegation of parent's work by principal
// to delegate: its duties kept apart (checkDuties), and its every bound
// within the parent's credential. An unset cost cap takes the parent's
// currency, so contract may change (sameCurrency). It returns the
// parent's credential. The contract must be checked as a client's first
// (validateClientContract), with its unknown fields dropped
// (knownFieldsOnly). DelegateTask and a plan's sub-task steps check a
// contract with it.
func delegable(contract *stewardv1.TaskContract, principal, delegate string, parent *stewardv1.Task) (*stewardv1.TaskCredential, error) {
	if err := checkDuties(contract, principal, delegate); err != nil {
		return nil, err
	}
	pc := parent.Credential.GetCredential()
	if pc == nil {
		return nil, errs.New(errs.FailedPrecondition, "parent task %s has no credential yet: governance issues it when the task is created; try again", parent.Contract.GetTaskId())
	}
	if err := credential.Narrows(pc, contract); err != nil {
		return nil, err
	}
	if err := sameCurrency(contract, pc, parent.Contract); err != nil {
		return nil, err
	}
	return pc, nil
}

// validateDelegate checks a DelegateTask request and names the first field
// that is wrong.
func validateDelegate(req *stewardv1.DelegateTaskRequest, now time.Time) error {
	switch {
	case req.ParentTaskId == "":
		return errs.Field("parent_task_id", "is required")
	case !eventlog.ValidTaskID(req.ParentTaskId):
		return errs.Field("parent_task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(req.ParentTaskId))
	case req.DelegateRef == "":
		return errs.Field("delegate_ref", "is required: who the sub-task's credential is for")
	}
	if err := checkText("delegate_ref", req.DelegateRef, MaxRefLen, true); err != nil {
		return err
	}
	if err := checkText("request_id", req.RequestId, MaxRequestID, false); err != nil {
		return err
	}
	return validateClientContract(req.Contract, now)
}

// mayDelegate checks that parent may hand work on now: it has not ended,
// and its credential is in force.
func (dg *delegation) mayDelegate(ctx context.Context, parent *stewardv1.Task, now time.Time) error {
	if task.Terminal(parent.Status) {
		return errs.New(errs.FailedPrecondition, "parent task %s is %s: an ended task delegates nothing", parent.Contract.GetTaskId(), task.StatusName(parent.Status))
	}
	return dg.credentialInForce(ctx, parent, now)
}

// priorDelegation returns the last hop of sub-task taskID, which an
// earlier call with requestID delegated from parentID, or nil if there is
// none. The claim has refused the id used otherwise (another parent, or
// CreateTask) already; a task under the id that is not such a sub-task
// is AlreadyExists all the same, before anything is reserved for a
// sub-task that could not be made.
func (dg *delegation) priorDelegation(ctx context.Context, taskID, requestID, parentID string) (*stewardv1.Delegation, error) {
	if requestID == "" {
		return nil, nil
	}
	recs, err := dg.log.Read(ctx, taskID)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	c := recs[0].Event.GetTaskCreated().GetContract()
	chain := c.GetDelegationChain()
	if c.GetParentTaskId() != parentID || len(chain) == 0 {
		return nil, errs.New(errs.AlreadyExists, "request_id %s already made task %s, which was not delegated from task %s", errs.Quote(requestID), taskID, parentID)
	}
	return chain[len(chain)-1], nil
}

// sameCurrency refuses a cost cap in another currency than the parent's,
// which could not be compared; an unset one takes the parent's.
func sameCurrency(c *stewardv1.TaskContract, parent *stewardv1.TaskCredential, parentContract *stewardv1.TaskContract) error {
	currency := parentContract.GetBudget().GetCurrency()
	if parent.MaxCostMicros == 0 && parentContract.GetBudget().GetMaxCostMicros() == 0 {
		return nil
	}
	if c.Budget == nil {
		c.Budget = &stewardv1.Budget{}
	}
	b := c.Budget
	if b.MaxCostMicros != 0 && currency != "" && b.Currency != currency {
		return errs.Field("contract.budget.currency", "%s is not the parent's %s: caps in different currencies cannot be compared", errs.Quote(b.Currency), errs.Quote(currency))
	}
	if b.MaxCostMicros == 0 {
		b.Currency = currency
	}
	return nil
}

func (s *taskService) DelegateTask(ctx context.Context, req *connect.Request[stewardv1.DelegateTaskRequest]) (*connect.Response[stewardv1.DelegateTaskResponse], error) {
	t, created, err := s.plane.delegation.DelegateTask(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.DelegateTaskResponse{Task: t, Created: created}), nil
}
