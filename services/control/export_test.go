package control

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// The commands of the plane's groups, as its tests call them: the RPC
// edge (service.go) calls each group directly.

func (p *Plane) ReviseContract(ctx context.Context, principal string, req *stewardv1.ReviseContractRequest) (*stewardv1.Task, *stewardv1.ContractRevision, error) {
	return revisions{p}.ReviseContract(ctx, principal, req)
}

func (p *Plane) DecideContractRevision(ctx context.Context, who rpc.Identity, req *stewardv1.DecideContractRevisionRequest) (*stewardv1.Task, *stewardv1.ContractRevision, error) {
	return revisions{p}.DecideContractRevision(ctx, who, req)
}

func (p *Plane) AcceptTask(ctx context.Context, principal string, req *stewardv1.AcceptTaskRequest) (*stewardv1.Task, error) {
	return p.acceptance.AcceptTask(ctx, principal, req)
}

func (p *Plane) ReturnTask(ctx context.Context, principal string, req *stewardv1.ReturnTaskRequest) (*stewardv1.Task, error) {
	return p.acceptance.ReturnTask(ctx, principal, req)
}

func (p *Plane) SubmitArtifact(ctx context.Context, principal string, req *stewardv1.SubmitArtifactRequest) (*stewardv1.Artifact, *stewardv1.Task, error) {
	return p.acceptance.SubmitArtifact(ctx, principal, req)
}

func (p *Plane) MarkProduced(ctx context.Context, principal string, req *stewardv1.MarkProducedRequest) (*stewardv1.Task, *stewardv1.AcceptanceRound, error) {
	return p.acceptance.MarkProduced(ctx, principal, req)
}

func (p *Plane) ReportUsage(ctx context.Context, principal string, req *stewardv1.ReportUsageRequest) (*stewardv1.Task, error) {
	return p.delegation.ReportUsage(ctx, principal, req)
}

func (p *Plane) RaiseBudget(ctx context.Context, principal string, req *stewardv1.RaiseBudgetRequest) (*stewardv1.Task, error) {
	return p.delegation.RaiseBudget(ctx, principal, req)
}

func (p *Plane) DelegateTask(ctx context.Context, principal string, req *stewardv1.DelegateTaskRequest) (*stewardv1.Task, bool, error) {
	return p.delegation.DelegateTask(ctx, principal, req)
}

func (p *Plane) RecordDecision(ctx context.Context, principal string, req *stewardv1.RecordDecisionRequest) (*stewardv1.Decision, bool, error) {
	return p.decisions.RecordDecision(ctx, principal, req)
}

func (p *Plane) AttachContext(ctx context.Context, principal string, req *stewardv1.AttachContextRequest) (*stewardv1.ContextItem, bool, error) {
	return p.decisions.AttachContext(ctx, principal, req)
}

func (p *Plane) ForkTask(ctx context.Context, principal string, req *stewardv1.ForkTaskRequest) (*stewardv1.Task, bool, error) {
	return p.delegation.ForkTask(ctx, principal, req)
}

func (p *Plane) Heartbeat(ctx context.Context, principal string, req *stewardv1.HeartbeatRequest) (*stewardv1.HeartbeatResponse, error) {
	return p.heartbeats.Heartbeat(ctx, principal, req)
}

// Undoable and InFlight are the compensation's rules, for its tests.
var (
	Undoable = undoable
	InFlight = inFlight
)

// CriteriaInputs is what MarkProduced compares before writing the checks
// it evaluated, for its tests.
var CriteriaInputs = criteriaInputs
