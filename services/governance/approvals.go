package governance

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Approvals indexes every approval on the log, folded from the approval
// events (approvalTypes, and only those) by an ordered consumer like any
// projection. It answers
// ListApprovals and GetApproval and finds an approval's task. It is safe
// for concurrent use.
type Approvals struct {
	logger *slog.Logger

	progress eventlog.Progress

	mu    sync.RWMutex
	byID  map[string]*stewardv1.Approval
	order []string
	// latest is each action's most recent approval (a revalidation may
	// ask for a second one), and each task's plan's, by subjectKey.
	latest map[string]string
	// traced is the W3C context (traceparent, tracestate) each traced
	// approval was opened in: its action's trace, which the decision on
	// it continues (trace.go).
	traced map[string][2]string
}

// NewApprovals returns an empty index.
func NewApprovals(logger *slog.Logger) *Approvals {
	return &Approvals{logger: logger, byID: map[string]*stewardv1.Approval{}, latest: map[string]string{}, traced: map[string][2]string{}}
}

// approvalTypes are the events that open, decide or close an approval:
// all the index reads.
var approvalTypes = []string{
	event.TypeFor[*stewardv1.ApprovalRequested](),
	event.TypeFor[*stewardv1.ApprovalDecided](),
	event.TypeFor[*stewardv1.ActionWithdrawn](),
	event.TypeFor[*stewardv1.ActionDenied](),
	event.TypeFor[*stewardv1.PlanSubmitted](), // a revision closes the plan's approval
}

// subjectKey keys latest: an action's id, or a task's plan.
func subjectKey(ap *stewardv1.Approval) string {
	if ap.GetPlanHash() != "" {
		return planKey(ap.GetTaskId())
	}
	return ap.GetActionId()
}

func planKey(taskID string) string { return "plan\x00" + taskID }

// Apply folds one task event into the index.
func (x *Approvals) Apply(rec *stewardv1.EventRecord) error {
	defer x.progress.Advance(rec.Sequence)
	x.mu.Lock()
	defer x.mu.Unlock()
	switch p := rec.Event.Payload.(type) {
	case *stewardv1.Event_ApprovalRequested:
		ap := proto.CloneOf(p.ApprovalRequested.Approval)
		if _, ok := x.byID[ap.ApprovalId]; ok {
			// Governance opens each approval id once (keyed by the
			// permit it follows); a second request under an open id is
			// one the task's fold refuses, appended by another hand —
			// what approvers read must stay what governance opened.
			break
		}
		x.order = append(x.order, ap.ApprovalId)
		x.byID[ap.ApprovalId] = ap
		x.latest[subjectKey(ap)] = ap.ApprovalId
		if rec.Event.TraceParent != "" {
			x.traced[ap.ApprovalId] = [2]string{rec.Event.TraceParent, rec.Event.TraceState}
		}
	case *stewardv1.Event_PlanSubmitted:
		// The version its approval was for is replaced: the approval
		// closes undecided, and the new version needs its own.
		x.close(planKey(rec.Event.TaskId))
	case *stewardv1.Event_ActionWithdrawn:
		x.close(p.ActionWithdrawn.ActionId)
	case *stewardv1.Event_ActionDenied:
		// A denial of an action awaiting approval (its credential was
		// revoked) closes the approval undecided.
		x.close(p.ActionDenied.ActionId)
	case *stewardv1.Event_ApprovalDecided:
		d := p.ApprovalDecided
		// A vote, folded as the task's fold does (task.CastVote): the
		// approval is decided by the vote that completes it.
		if ap := x.byID[d.ApprovalId]; ap != nil && ap.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED && task.VoteOf(ap, d.DecidedBy) == nil {
			ap = proto.CloneOf(ap)
			task.CastVote(ap, d, rec.Event.Time)
			x.byID[d.ApprovalId] = ap
		}
	}
	return nil
}

// close marks the undecided approval of key (an action's id, or a plan's
// planKey), if any, withdrawn.
func (x *Approvals) close(key string) {
	if ap := x.byID[x.latest[key]]; ap != nil && ap.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
		ap = proto.CloneOf(ap)
		ap.Withdrawn = true
		x.byID[ap.ApprovalId] = ap
	}
}

// Skip notes an event that could not be decoded.
func (x *Approvals) Skip(seq uint64, _ error) { x.progress.Advance(seq) }

// Progress says how far the index has applied the log.
func (x *Approvals) Progress() *eventlog.Progress { return &x.progress }

// Sync waits until the index holds every approval event on the log now.
func (x *Approvals) Sync(ctx context.Context, log *eventlog.Log) error {
	return eventlog.CatchUp(ctx, x, func(ctx context.Context) (uint64, error) { return log.LastOfTypes(ctx, approvalTypes...) })
}

// Fresh returns an approval as the log has it now.
func (x *Approvals) Fresh(ctx context.Context, log *eventlog.Log, id string) (*stewardv1.Approval, error) {
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := x.Sync(wctx, log); err != nil {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	ap, ok := x.byID[id]
	if !ok {
		return nil, approvalNotFound(id)
	}
	return proto.CloneOf(ap), nil
}

// approvalNotFound answers for an approval that does not exist, or is on
// another tenant's task: the same words for both.
func approvalNotFound(id string) error {
	return errs.New(errs.NotFound, "approval %s not found", id)
}

// List returns approvals in the order they were requested, of one task
// when taskID is set, and only undecided ones when pendingOnly.
func (x *Approvals) List(taskID string, pendingOnly bool) []*stewardv1.Approval {
	out, _ := x.Page(taskID, pendingOnly, 0, math.MaxInt)
	return out
}

// Page is List from position after (0 for the start), up to limit
// approvals, with the position of each.
func (x *Approvals) Page(taskID string, pendingOnly bool, after, limit int) ([]*stewardv1.Approval, []int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []*stewardv1.Approval
	var at []int
	for i := after; i < len(x.order) && len(out) < limit; i++ {
		ap := x.byID[x.order[i]]
		decided := ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED || ap.Withdrawn
		if (taskID != "" && ap.TaskId != taskID) || (pendingOnly && decided) {
			continue
		}
		out = append(out, proto.CloneOf(ap))
		at = append(at, i)
	}
	return out, at
}

// MaxApprovalPage is the most approvals a page of ListApprovals holds, and
// what it holds when the request names no page size.
const MaxApprovalPage = 1000

// approvalPages names ListApprovals's page tokens, which no other list
// takes.
const approvalPages = "approvals"

// Len returns how many approvals there have been: the end of the list,
// past which no page token points.
func (x *Approvals) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.order)
}

// approvalPage is one page of ListApprovals: the tenant's approvals from
// position after, at most size of them and rpc.MaxPageBytes as weigh
// weighs them, with the
// token of the position after the last one when there are more.
func (p *Plane) approvalPage(ctx context.Context, who rpc.Identity, req *stewardv1.ListApprovalsRequest, after, size int, weigh rpc.Weigher) (*stewardv1.ListApprovalsResponse, error) {
	out := &stewardv1.ListApprovalsResponse{}
	bytes := 0
	for {
		batch, at := p.approvals.Page(req.TaskId, req.PendingOnly, after, size)
		if len(batch) == 0 {
			return out, nil
		}
		for i, ap := range batch {
			mine, err := p.shown(ctx, who, []*stewardv1.Approval{ap})
			if err != nil {
				return nil, err
			}
			if len(mine) == 0 {
				continue
			}
			n := weigh(ap)
			if len(out.Approvals) == size || (len(out.Approvals) > 0 && bytes+n > rpc.MaxPageBytes) {
				out.NextPageToken = rpc.EncodePageToken(approvalPages, at[i])
				return out, nil
			}
			bytes += n
			out.Approvals = append(out.Approvals, ap)
		}
		after = at[len(at)-1] + 1
	}
}
