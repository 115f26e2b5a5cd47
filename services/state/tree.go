package state

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Bounds of GetTaskTree.
const (
	// DefaultTreeDepth and MaxTreeDepth bound the levels of sub-tasks below
	// the task asked for; a delegation goes no deeper than 16 hands.
	DefaultTreeDepth = 3
	MaxTreeDepth     = 16
	// DefaultTreeChildren and MaxTreeChildren bound the sub-tasks listed
	// per node; the rest are a page token away.
	DefaultTreeChildren = 50
	MaxTreeChildren     = 200
	// MaxTreeNodes bounds the nodes of one answer: past it, nodes are
	// listed without their sub-tasks, each with a token for them.
	MaxTreeNodes = 2000
)

// spend is tokens and cost spent.
type spend struct{ tokens, cost int64 }

func (s *spend) add(o spend) { s.tokens += o.tokens; s.cost += o.cost }

// noteSpend adds what ev spends of the task's own to v.spent: a
// reservation for a sub-task or a fork is the other task's to spend, and
// what comes back of it (BudgetReleased) was never spent here.
func (v *view) noteSpend(ev *stewardv1.Event) {
	if c := ev.GetBudgetConsumed(); c != nil && task.ReservedFor(c) == "" {
		v.spent.add(spend{c.Tokens, c.CostMicros})
	}
}

// relate indexes a new task's view under its parent and its objective;
// the caller holds p.mu.
func (p *Projection) relate(v *view) {
	c := v.task.GetContract()
	if parent := c.GetParentTaskId(); parent != "" {
		p.children[parent] = append(p.children[parent], v)
	}
	if o := c.GetObjectiveId(); o != "" {
		p.byObjective[o] = append(p.byObjective[o], v)
	}
}

// currentMilestone is the milestone a task is at: the first of its
// contract's milestones that is not done (the fold's
// Task.current_milestone, docs/milestones.md); for a task that declares
// none, that of a plan step of it that is running, else that of its
// latest action that names one (an action of a plan step carries the
// step's).
func currentMilestone(t *stewardv1.Task) string {
	if len(t.GetContract().GetMilestones()) > 0 {
		return t.CurrentMilestone
	}
	if ps := t.GetPlan(); ps != nil {
		steps := ps.GetPlan().GetSteps()
		for i, st := range ps.Steps {
			if st.Status == stewardv1.StepStatus_STEP_STATUS_RUNNING && i < len(steps) && steps[i].MilestoneId != "" {
				return steps[i].MilestoneId
			}
		}
	}
	for i := len(t.Actions) - 1; i >= 0; i-- {
		if m := t.Actions[i].MilestoneId; m != "" {
			return m
		}
	}
	return ""
}

// treeWalk builds one GetTaskTree answer under the projection's read
// lock: subtree totals are counted once per node (memo), whatever the
// answer lists.
type treeWalk struct {
	p        *Projection
	children int
	nodes    int
	totals   map[*view]subtree
	tenant   string
}

// subtree is what a task and every task below it spent, and how many
// they are.
type subtree struct {
	spend
	tasks uint32
}

func (w *treeWalk) total(v *view) subtree {
	if s, ok := w.totals[v]; ok {
		return s
	}
	s := subtree{spend: v.spent, tasks: 1}
	for _, c := range w.p.children[v.task.Contract.GetTaskId()] {
		cs := w.total(c)
		s.add(cs.spend)
		s.tasks += cs.tasks
	}
	w.totals[v] = s
	return s
}

// node is v's node, with its sub-tasks from offset on to depth levels
// below it, as far as the bounds let it.
func (w *treeWalk) node(v *view, offset, depth int) *stewardv1.TaskTreeNode {
	t := v.task
	id := t.Contract.GetTaskId()
	total := w.total(v)
	n := &stewardv1.TaskTreeNode{
		TaskId: id, Intent: t.Contract.GetIntent(), Status: t.Status, MilestoneId: currentMilestone(t),
		Tokens: v.spent.tokens, CostMicros: v.spent.cost,
		SubtreeTokens: total.tokens, SubtreeCostMicros: total.cost, SubtreeTasks: total.tasks,
	}
	w.nodes++
	kids := w.p.children[id]
	n.ChildCount = uint32(len(kids))
	i := offset
	for ; i < len(kids) && depth > 0 && i-offset < w.children && w.nodes < MaxTreeNodes; i++ {
		if kids[i].task.Tenant != w.tenant {
			continue // never so: a sub-task is of its parent's tenant
		}
		n.Children = append(n.Children, w.node(kids[i], 0, depth-1))
	}
	if i < len(kids) {
		// Positions count from one, so that a token for the first
		// sub-task is not the empty token of the end.
		n.ChildrenPageToken = rpc.EncodePageToken(treePages(id), i+1)
	}
	return n
}

// treePages names the page tokens of one task's sub-tasks.
func treePages(taskID string) string { return "tree~" + taskID }

// Tree returns taskID's tree as GetTaskTree answers it: its sub-tasks from
// offset on, depth levels of them, children per node. Errors as Get.
func (p *Projection) Tree(taskID string, offset, depth, children int) (*stewardv1.TaskTreeNode, error) {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, err := p.lookup(taskID)
	if err != nil {
		return nil, err
	}
	w := &treeWalk{p: p, children: children, totals: map[*view]subtree{}, tenant: v.task.Tenant}
	return w.node(v, offset, depth), nil
}

// childCount is how many sub-tasks taskID has.
func (p *Projection) childCount(taskID string) int {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.children[taskID])
}

// treeBound checks one of GetTaskTree's bounds: zero is def, past max is
// InvalidArgument naming field.
func treeBound(field string, n uint32, def, max int) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case int(n) > max:
		return 0, errs.Field(field, "%d exceeds the limit of %d", n, max)
	}
	return int(n), nil
}

// GetTaskTree serves a task with its sub-tasks, recursively, bounded and
// paged: their state, which every caller of the tenant reads (as
// GetTask), never their content. The edge has refused another tenant's
// task already.
func (s *queryService) GetTaskTree(ctx context.Context, req *connect.Request[stewardv1.GetTaskTreeRequest]) (*connect.Response[stewardv1.GetTaskTreeResponse], error) {
	depth, err := treeBound("max_depth", req.Msg.MaxDepth, DefaultTreeDepth, MaxTreeDepth)
	if err != nil {
		return nil, err
	}
	children, err := treeBound("max_children", req.Msg.MaxChildren, DefaultTreeChildren, MaxTreeChildren)
	if err != nil {
		return nil, err
	}
	if err := s.plane.caughtUp(ctx, req.Msg.TaskId); err != nil {
		return nil, err
	}
	// Its sub-tasks are other tasks: the views must have all of the log.
	wctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	if err := eventlog.CatchUp(wctx, s.plane.views, s.plane.log.LastTaskSequence); err != nil {
		return nil, err
	}
	offset := 0
	if req.Msg.PageToken != "" {
		pos, err := rpc.DecodePageToken(treePages(req.Msg.TaskId), req.Msg.PageToken, s.plane.views.childCount(req.Msg.TaskId)+1)
		if err != nil {
			return nil, err
		}
		offset = pos - 1
	}
	root, err := s.plane.views.Tree(req.Msg.TaskId, offset, depth, children)
	if errs.Is(err, errs.NotFound) {
		return nil, noView(req.Msg.TaskId)
	}
	if err != nil {
		return nil, fmt.Errorf("task tree: %w", err)
	}
	return connect.NewResponse(&stewardv1.GetTaskTreeResponse{Root: root}), nil
}
