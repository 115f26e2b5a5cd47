package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/celvalue"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// maxProduceTries bounds how often MarkProduced evaluates again because
// the task changed under it.
const maxProduceTries = 8

// errStale says, from a build, that the task changed since what the build
// decides on was worked out before the conditional write (criteria
// evaluated, tools looked up): work it out again.
var errStale = errors.New("the task changed since it was read")

// MarkProduced records that the task has produced its result: it evaluates
// every acceptance criterion over the latest artifacts and the actions,
// and appends the round. A failed check sends the task back to running; if
// all pass the task waits for its acceptance owner, or, when no review is
// required, is accepted. With a request id the call is idempotent: a
// repeat returns the task and the round it recorded.
func (ac *acceptance) MarkProduced(ctx context.Context, principal string, req *stewardv1.MarkProducedRequest) (_ *stewardv1.Task, _ *stewardv1.AcceptanceRound, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return nil, nil, err
	}
	if err := checkReportShape(req.Report); err != nil {
		return nil, nil, err
	}
	u, err := ac.claimRequestID(ctx, principal, requestid.MarkProduced, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, nil, err
	}
	defer u.settle(ctx, &err)
	return ac.produce(ctx, principal, req.TaskId, u.id, req.RequestId, req.Report)
}

// produce records, under event id (empty for a random one), that taskID
// has produced its result, with its criteria evaluated: MarkProduced's
// work after its request id is claimed, and a finished plan's ending
// (plandriver), whose id derives from the plan version. A repeat of
// an id already recorded returns the round it recorded. report, if not
// nil, is the agent's account, recorded with the round.
func (ac *acceptance) produce(ctx context.Context, principal, taskID, id, requestID string, report *stewardv1.ExecutionReport) (*stewardv1.Task, *stewardv1.AcceptanceRound, error) {
	for range maxProduceTries {
		t, history, err := ac.tasks.Load(ctx, taskID)
		if err != nil {
			return nil, nil, err
		}
		if id != "" && history.Has(id) {
			return ac.producedRound(ctx, t, id)
		}
		// After the repeat's answer: a revocation since does not take
		// back what was recorded before it.
		if err := ac.notRevoked(ctx, taskID, "mark its result produced"); err != nil {
			return nil, nil, err
		}
		// Dry-run without checks first: a task that may not produce now
		// (an action under way, a round open) is refused before any
		// content is read.
		dry, err := ac.producedEvent(t, principal, id, requestID, unevaluated(t.Contract.GetAcceptanceCriteria()), report, ac.now())
		if err != nil {
			return nil, nil, err
		}
		if err := task.Check(t, dry); err != nil {
			return nil, nil, err
		}
		vars, err := ac.gather(ctx, t)
		if err != nil {
			return nil, nil, err
		}
		checks, err := ac.criteria.evaluate(ctx, t.Contract.GetAcceptanceCriteria(), vars)
		if err != nil {
			return nil, nil, err
		}
		inputs, now := criteriaInputs(t), ac.now()
		var round uint32
		t, err = ac.apply(ctx, taskID, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
			// The checks hold for the task they were evaluated on; one
			// that has changed since (a new artifact, an action ended,
			// another round) is evaluated again.
			if criteriaInputs(cur) != inputs {
				return nil, errStale
			}
			round = uint32(len(cur.Acceptance)) + 1
			return ac.producedEvent(cur, principal, id, requestID, checks, report, now)
		})
		if errors.Is(err, errStale) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if r := roundOf(t, round); r != nil && r.ProducedAt.AsTime().Equal(now.UTC()) && r.ProducedBy == principal {
			return t, r, nil
		}
		// A repeat of this request landed first.
		return ac.producedRound(ctx, t, id)
	}
	return nil, nil, errs.New(errs.Conflict, "task %s is changing too fast to evaluate its acceptance criteria; try again", taskID)
}

// unevaluated is one not-yet-evaluated check per criterion: the shape of
// a round for the dry run, whose checks the fold counts.
func unevaluated(cs []*stewardv1.AcceptanceCriterion) []*stewardv1.CriterionResult {
	out := make([]*stewardv1.CriterionResult, len(cs))
	for i, c := range cs {
		out[i] = &stewardv1.CriterionResult{CriterionId: c.Id}
	}
	return out
}

// producedEvent is the TaskProduced that records checks on t.
func (ac *acceptance) producedEvent(t *stewardv1.Task, principal, id, requestID string, checks []*stewardv1.CriterionResult, report *stewardv1.ExecutionReport, now time.Time) (*stewardv1.Event, error) {
	latest := task.LatestArtifacts(t)
	refs := make([]string, len(latest))
	for i, a := range latest {
		refs[i] = task.ArtifactRef(a)
	}
	taskID := t.Contract.GetTaskId()
	return ac.event(event.Meta{ID: id, TaskID: taskID, Actor: ac.actor(principal), CorrelationID: requestID, Time: now},
		&stewardv1.TaskProduced{
			Round:          uint32(len(t.Acceptance)) + 1,
			Checks:         checks,
			Artifacts:      refs,
			ReviewRequired: task.ReviewRequired(t.Contract),
			Report:         report,
			UnderFallback:  task.UnderFallback(t), // docs/fallbacks.md
		})
}

// producedRound returns the round an earlier MarkProduced with event id
// recorded.
func (ac *acceptance) producedRound(ctx context.Context, t *stewardv1.Task, id string) (*stewardv1.Task, *stewardv1.AcceptanceRound, error) {
	ev, err := commandEvent(ctx, ac.log, t.Contract.GetTaskId(), id)
	if err != nil {
		return nil, nil, err
	}
	pr := ev.GetTaskProduced()
	if pr == nil {
		// The claim let only a MarkProduced record under this id.
		return nil, nil, errs.New(errs.Internal, "task %s: event %s of request %q is a %s, not a TaskProduced", t.Contract.GetTaskId(), id, ev.CorrelationId, ev.Type)
	}
	r := roundOf(t, pr.Round)
	if r == nil {
		return nil, nil, errs.New(errs.Internal, "task %s has no acceptance round %d", t.Contract.GetTaskId(), pr.Round)
	}
	return t, r, nil
}

func roundOf(t *stewardv1.Task, round uint32) *stewardv1.AcceptanceRound {
	if round == 0 || int(round) > len(t.Acceptance) {
		return nil
	}
	return t.Acceptance[round-1]
}

// criteriaInputs sums up what criteria read from t, to tell whether t
// changed in a way that matters while they were evaluated — the criteria
// themselves too: a revision that takes effect meanwhile may keep a
// criterion's id and change what it says, which the fold cannot tell.
func criteriaInputs(t *stewardv1.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "round %d; contract %d %s;", len(t.Acceptance), task.ContractVersion(t), t.ContractHash)
	for _, a := range task.LatestArtifacts(t) {
		fmt.Fprintf(&b, "%s %s;", task.ArtifactRef(a), a.Sha256)
	}
	for _, a := range t.Actions {
		fmt.Fprintf(&b, "%s %d %s;", a.ActionId, a.Status, a.Outcome.GetResultHash())
	}
	return b.String()
}

// gather builds the variables criteria are evaluated over (see
// criteria.go). Content is read from the results store only when some
// criterion names the field that holds it (json, text or result): an
// expression reads a field by its name, and a task whose criteria only
// look at names and sizes should not load megabytes to do so.
func (ac *acceptance) gather(ctx context.Context, t *stewardv1.Task) (map[string]any, error) {
	var needContent, needResults bool
	for _, c := range t.Contract.GetAcceptanceCriteria() {
		e := c.Expression
		needContent = needContent || strings.Contains(e, "json") || strings.Contains(e, "text")
		needResults = needResults || strings.Contains(e, "result")
	}
	artifacts := map[string]ref.Val{}
	for _, a := range task.LatestArtifacts(t) {
		var js, text ref.Val
		isJSON, isText := contentKind(a.MediaType)
		if needContent && (isJSON || isText) && ac.inStore(a.Uri) {
			data, err := ac.results.Get(ctx, a.Uri, a.Sha256)
			if err != nil {
				return nil, fmt.Errorf("read artifact %s: %w", task.ArtifactRef(a), err)
			}
			if isJSON {
				js = parseJSON(data, "artifact "+task.ArtifactRef(a))
			} else {
				text = types.String(strings.ToValidUTF8(string(data), "\uFFFD"))
			}
		}
		artifacts[a.Name] = artifactValue(a, js, text)
	}
	actions := make([]ref.Val, len(t.Actions))
	for i, a := range t.Actions {
		var result ref.Val
		if o := a.Outcome; needResults && a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED && (len(o.GetResult()) > 0 || ac.inStore(o.GetResultRef())) {
			data, err := ac.results.Result(ctx, o.Result, o.ResultRef, o.ResultHash)
			if err != nil {
				return nil, fmt.Errorf("read the result of action %s: %w", a.ActionId, err)
			}
			result = parseJSON(data, "the result of action "+a.ActionId)
		}
		actions[i] = actionValue(a, result)
	}
	return map[string]any{
		"artifacts": celvalue.Object(artifacts),
		"actions":   types.NewRefValList(types.DefaultTypeAdapter, actions),
	}, nil
}

// contentKind tells whether a media type is JSON (application/json,
// anything +json) or text (text/*).
func contentKind(mediaType string) (isJSON, isText bool) {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return false, false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json"), strings.HasPrefix(mt, "text/")
}

// parseJSON is data as a CEL value; content that is not JSON is an error
// value, so that a criterion reading it fails saying why.
func parseJSON(data []byte, what string) ref.Val {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return types.NewErr("%s is not valid JSON: %v", what, err)
	}
	return celvalue.FromJSON(v)
}

func (s *taskService) MarkProduced(ctx context.Context, req *connect.Request[stewardv1.MarkProducedRequest]) (*connect.Response[stewardv1.MarkProducedResponse], error) {
	t, r, err := s.plane.acceptance.MarkProduced(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.MarkProducedResponse{Task: t, Round: r}), nil
}
