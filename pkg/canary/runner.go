package canary

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/sdk/go/steward"
)

// Runner drives samples as their agent would, through the Go SDK against
// a Steward. A Runner is used by one goroutine at a time.
type Runner struct {
	// Agent is the client the samples' agent calls as.
	Agent *steward.Client
	// As is a client signed in as principal: an approver a sample names.
	As func(principal string) (*steward.Client, error)
	// Model, when set, replaces the model id of every decision (a canary
	// --against model=ID).
	Model string
	// Timeout bounds each sample; past it the sample is not accepted.
	Timeout time.Duration
	// Now is the clock a run is timed by.
	Now func() time.Time
	// Poll is how often a plan's progress is read (default 20ms).
	Poll time.Duration
	// CandidateTool is the tool a candidate contract replaced (--against
	// tool=FILE): a proposal of it refused as bad input is the candidate
	// refusing what the sample sends, which fails the sample.
	CandidateTool string
}

// candidateRefused is a proposal of the candidate tool Steward refused as
// bad input under the candidate's contract (its parameters schema, say).
type candidateRefused struct{ error }

func (c candidateRefused) Unwrap() error { return c.error }

// errStopped ends a script whose action did not succeed: its agent cannot
// go on, and the task is judged as it stands.
var errStopped = errors.New("stopped")

// Run runs sample s as a new task and observes what it did. An error is
// Steward failing the runner (a refused request, a lost server), not the
// sample failing: that is in the Run.
func (r *Runner) Run(ctx context.Context, s Sample) (Run, error) {
	began := r.Now()
	bounded, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	k := proto.CloneOf(s.contract)
	k.InputSnapshot = inputSnapshot(s.Input)
	task, err := r.Agent.CreateTask(bounded, &stewardv1.CreateTaskRequest{Contract: k, RequestId: "canary-" + s.Name})
	if err != nil {
		return Run{}, fmt.Errorf("sample %s: create task: %w", s.Name, err)
	}
	id := task.GetContract().GetTaskId()
	stepErr := r.started(bounded, id)
	if stepErr == nil && s.plan != nil {
		stepErr = r.runPlan(bounded, id, s)
	} else if stepErr == nil {
		stepErr = r.runSteps(bounded, id, s)
	}
	timedOut := bounded.Err() != nil && ctx.Err() == nil
	var byCandidate candidateRefused
	refusedStep := stepErr != nil && (refusal(stepErr) || errors.As(stepErr, &byCandidate))
	if stepErr != nil && !errors.Is(stepErr, errStopped) && !timedOut && !refusedStep {
		return Run{}, fmt.Errorf("sample %s: %w", s.Name, stepErr)
	}
	task, err = r.Agent.GetTask(ctx, id)
	if err != nil {
		return Run{}, fmt.Errorf("sample %s: read task: %w", s.Name, err)
	}
	run := Observe(task)
	run.Sample = s.Name
	run.Millis = r.Now().Sub(began).Milliseconds()
	if refusedStep && !run.Accepted {
		run.Reason = fmt.Sprintf("%s (%s)", strings.Replace(stepErr.Error(), "steward: ", "", 1), run.Reason)
	}
	if timedOut && !run.Accepted {
		run.Reason = fmt.Sprintf("timed out after %s (%s)", r.Timeout, run.Reason)
	}
	return run, nil
}

// refusal reports whether Steward turned a step down for the state the
// task is in (suspended past its budget, not allowed, not now): the
// sample's agent could not go on, which judges the sample, not the run.
// Bad input stays an error: the definition is wrong.
func refusal(err error) bool {
	switch steward.CodeOf(err) {
	case connect.CodeFailedPrecondition, connect.CodeResourceExhausted, connect.CodePermissionDenied, connect.CodeOutOfRange, connect.CodeAborted:
		return true
	}
	return false
}

// inputSnapshot records the sample's input by digest, so that the task
// says which input it ran on.
func inputSnapshot(input json.RawMessage) *stewardv1.InputSnapshot {
	if len(input) == 0 {
		return nil
	}
	sum := sha256.Sum256(input)
	return &stewardv1.InputSnapshot{Version: "sha256:" + hex.EncodeToString(sum[:])}
}

// started waits for the task to leave pending and hold its credential:
// the control plane starts a task and governance issues its credential in
// two reactions to its creation, in either order, and a plan is refused
// until the credential is there. A task that ends first is the run's to
// report.
func (r *Runner) started(ctx context.Context, id string) error {
	return r.until(ctx, id, func(t *stewardv1.Task) bool {
		return t.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING && t.Credential != nil || task.Terminal(t.Status)
	})
}

// until reads the task every Poll until done says so.
func (r *Runner) until(ctx context.Context, id string, done func(*stewardv1.Task) bool) error {
	tick := time.NewTicker(cmpOr(r.Poll, 20*time.Millisecond))
	defer tick.Stop()
	for {
		t, err := r.Agent.GetTask(ctx, id)
		if err != nil {
			return err
		}
		if done(t) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (r *Runner) runSteps(ctx context.Context, id string, s Sample) error {
	for i, st := range s.Steps {
		var err error
		switch {
		case st.Propose != nil:
			err = r.propose(ctx, id, i, st.Propose, s.input)
		case st.Decide != nil:
			err = r.decide(ctx, id, i, st.Decide)
		case st.Produce != nil:
			err = r.produce(ctx, id, i, st.Produce)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) propose(ctx context.Context, id string, i int, p *Propose, input map[string]any) error {
	params, err := structpb.NewStruct(withInput(p.Params, input))
	if err != nil {
		return fmt.Errorf("step %d: params: %w", i+1, err)
	}
	a, err := r.Agent.ProposeAndWait(ctx, &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: fmt.Sprintf("step-%d", i+1),
		Tool: p.Tool, Target: p.Target, Params: params, Rationale: p.rationale()})
	if err != nil {
		err = fmt.Errorf("step %d: propose %s: %w", i+1, p.Tool, err)
		if p.Tool == r.CandidateTool && steward.CodeOf(err) == connect.CodeInvalidArgument {
			return candidateRefused{err}
		}
		return err
	}
	if a.Status == stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL && p.ApproveAs != "" {
		if err := r.approve(ctx, id, p.ApproveAs, map[string]bool{}, func(ap *stewardv1.Approval) bool { return ap.ActionId == a.ActionId }); err != nil {
			return fmt.Errorf("step %d: approve as %s: %w", i+1, p.ApproveAs, err)
		}
		if a, err = r.Agent.WaitAction(ctx, id, a.ActionId); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		return errStopped
	}
	return nil
}

func (p *Propose) rationale() *stewardv1.ActionRationale {
	if p.Rationale == nil {
		return nil
	}
	return &stewardv1.ActionRationale{ExpectedImpact: p.Rationale.ExpectedImpact, RollbackPlan: p.Rationale.RollbackPlan}
}

// withInput replaces each parameter "$input.KEY" by the input's KEY.
func withInput(params, input map[string]any) map[string]any {
	out := make(map[string]any, len(params))
	for k, v := range params {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "$input.") {
			if got, ok := input[strings.TrimPrefix(s, "$input.")]; ok {
				v = got
			}
		}
		out[k] = v
	}
	return out
}

// approve votes for each pending approval of the task that match picks
// and voted does not hold, as principal, bound to the hash the approver
// read. voted keeps a vote from being cast twice while Steward has not yet
// closed its approval (a second is refused).
func (r *Runner) approve(ctx context.Context, id, principal string, voted map[string]bool, match func(*stewardv1.Approval) bool) error {
	c, err := r.As(principal)
	if err != nil {
		return err
	}
	list, err := c.ListApprovals(ctx, &stewardv1.ListApprovalsRequest{TaskId: id, PendingOnly: true})
	if err != nil {
		return err
	}
	for _, ap := range list.Approvals {
		if !match(ap) || voted[ap.ApprovalId] {
			continue
		}
		voted[ap.ApprovalId] = true
		if _, err := c.DecideApproval(ctx, &stewardv1.DecideApprovalRequest{ApprovalId: ap.ApprovalId, ActionHash: ap.ActionHash,
			PlanHash: ap.PlanHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, Comment: "canary"}); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) decide(ctx context.Context, id string, i int, d *Decide) error {
	model := d.Model
	if r.Model != "" {
		model = r.Model
	}
	_, err := r.Agent.RecordDecision(ctx, &stewardv1.RecordDecisionRequest{TaskId: id, Decision: &stewardv1.Decision{
		DecisionId: fmt.Sprintf("step-%d", i+1),
		Call:       &stewardv1.ModelCall{Provider: "canary", ModelId: model, TokensIn: d.TokensIn, TokensOut: d.TokensOut, CostMicros: d.CostMicros},
		LedTo:      &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}},
	}})
	if err != nil {
		return fmt.Errorf("step %d: record decision: %w", i+1, err)
	}
	return nil
}

// produce's and runPlan's request ids hold the task's id: a request id
// names one command of its caller, whatever the task.
func (r *Runner) produce(ctx context.Context, id string, i int, p *Produce) error {
	for _, a := range p.Artifacts {
		media, content := a.MediaType, []byte(a.Content)
		var text string
		switch {
		case media == "":
			media = "application/json"
		case strings.HasPrefix(media, "text/") && json.Unmarshal(a.Content, &text) == nil:
			content = []byte(text)
		}
		if _, err := r.Agent.SubmitArtifact(ctx, &stewardv1.SubmitArtifactRequest{TaskId: id, Name: a.Name, MediaType: media, Content: content,
			RequestId: fmt.Sprintf("%s-step-%d-%s", id, i+1, a.Name)}); err != nil {
			return fmt.Errorf("step %d: artifact %s: %w", i+1, a.Name, err)
		}
	}
	if _, err := r.Agent.MarkProduced(ctx, &stewardv1.MarkProducedRequest{TaskId: id, RequestId: fmt.Sprintf("%s-step-%d", id, i+1)}); err != nil {
		return fmt.Errorf("step %d: mark produced: %w", i+1, err)
	}
	return nil
}

// runPlan submits the plan and follows it until its task ends, is
// produced, or waits for what nobody here will do, approving what it
// waits for as the sample's approver.
func (r *Runner) runPlan(ctx context.Context, id string, s Sample) error {
	if _, err := r.Agent.SubmitPlan(ctx, &stewardv1.SubmitPlanRequest{TaskId: id, Plan: s.plan, RequestId: id + "-plan"}); err != nil {
		return fmt.Errorf("submit plan: %w", err)
	}
	var approveErr error
	voted := map[string]bool{}
	err := r.until(ctx, id, func(t *stewardv1.Task) bool {
		if t.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL && s.ApproveAs != "" {
			approveErr = r.approve(ctx, id, s.ApproveAs, voted, func(*stewardv1.Approval) bool { return true })
			return approveErr != nil
		}
		return !planMoving(t, s.ApproveAs != "")
	})
	return cmpErr(approveErr, err)
}

// planMoving reports whether a plan's task may still move without anyone
// but Steward and the sample's approver.
func planMoving(t *stewardv1.Task, approver bool) bool {
	switch t.Status {
	case stewardv1.TaskStatus_TASK_STATUS_RUNNING, stewardv1.TaskStatus_TASK_STATUS_RECONCILING, stewardv1.TaskStatus_TASK_STATUS_COMPENSATING:
		g := t.GetPlan().GetGovernance()
		return g != stewardv1.PlanGovernance_PLAN_GOVERNANCE_DENIED && g != stewardv1.PlanGovernance_PLAN_GOVERNANCE_REJECTED
	case stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL:
		return approver
	}
	return false
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
