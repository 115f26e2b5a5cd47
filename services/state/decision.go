package state

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// decisionPages names ListDecisions's page tokens.
const decisionPages = "decisions"

// ListDecisions serves a task's decisions in the order recorded, with the
// context items they cite, read-your-writes as GetTask: what an agent that
// restarts reads to reuse what its model decided instead of asking again.
// Only who may read the task's content may (the role table): a decision's
// rationale is the agent's words.
func (s *queryService) ListDecisions(ctx context.Context, req *connect.Request[stewardv1.ListDecisionsRequest]) (*connect.Response[stewardv1.ListDecisionsResponse], error) {
	size, err := rpc.PageSize(req.Msg.PageSize, DefaultPageSize, MaxPageSize)
	if err != nil {
		return nil, err
	}
	taskID := req.Msg.TaskId
	if err := s.plane.readable(ctx, rpc.Caller(ctx), taskID); err != nil {
		return nil, err
	}
	var resp *stewardv1.ListDecisionsResponse
	var next int
	err = s.plane.read(ctx, taskID, func(views *Projection) error {
		n, err := views.decisionCount(taskID)
		if err != nil {
			return err
		}
		after, err := rpc.DecodePageToken(decisionPages, req.Msg.PageToken, n)
		if err != nil {
			return err
		}
		resp, next, err = views.decisions(taskID, after, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	resp.NextPageToken = rpc.EncodePageToken(decisionPages, next)
	return connect.NewResponse(resp), nil
}

// decisionCount returns how many decisions the task's view holds.
func (p *Projection) decisionCount(taskID string) (int, error) {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, err := p.whole(taskID)
	if err != nil {
		return 0, err
	}
	return len(v.task.Decisions), nil
}

// decisions copies the task's decisions after the first after, at most
// size of them, and the context items they cite; next is where the next
// page starts, 0 after the last.
func (p *Projection) decisions(taskID string, after, size int) (*stewardv1.ListDecisionsResponse, int, error) {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, err := p.whole(taskID)
	if err != nil {
		return nil, 0, err
	}
	t := v.task
	end := min(after+size, len(t.Decisions))
	resp := &stewardv1.ListDecisionsResponse{}
	cited := map[string]bool{}
	for _, d := range t.Decisions[after:end] {
		resp.Decisions = append(resp.Decisions, proto.CloneOf(d))
		for _, c := range d.ContextIds {
			if !cited[c] {
				cited[c] = true
				if item := task.FindContext(t, c); item != nil {
					resp.ContextItems = append(resp.ContextItems, proto.CloneOf(item))
				}
			}
		}
	}
	if end == len(t.Decisions) {
		end = 0
	}
	return resp, end, nil
}
