package execution

import (
	"context"
	"fmt"
	"time"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
)

// credentialStands says why a permit issued earlier may not be used now:
// the task's credential, or an ancestor's, was revoked since, or it has
// expired (compensations are exempt from expiry, as governance has them).
// Governance checked both before the permit; this closes the time between
// the permit and the call, which a retry's backoff or a pause can make
// long.
func (p *Plane) credentialStands(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (string, error) {
	if why, err := p.tasks.Revoked(ctx, t); why != "" || err != nil {
		return why, err
	}
	c := t.Credential.GetCredential()
	if a.Compensates == "" && c.GetExpiresAt() != nil && !p.now().Before(c.ExpiresAt.AsTime()) {
		return fmt.Sprintf("credential %s expired at %s", c.CredentialId, c.ExpiresAt.AsTime().UTC().Format(time.RFC3339)), nil
	}
	return "", nil
}

// prepare checks what is about to run: the request against the
// permit's hash, the tool (among those tenant, the task's, sees) and its
// adapter. A refusal is the failed outcome to record instead of a call.
func (p *Plane) prepare(ctx context.Context, taskID, tenant string, a *stewardv1.Action) (*prepared, *adapter.Result, error) {
	refuse := func(why string, err error) (*prepared, *adapter.Result, error) {
		return nil, &adapter.Result{
			Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC,
			Reason: "refused before dispatch: " + why + ": " + err.Error(),
		}, nil
	}
	// Recompute the request hash from the payload about to be sent —
	// inline in the action or stored — and compare with the permit: what
	// runs is exactly what was approved, on every attempt.
	body, err := p.cfg.Requests.Request(ctx, a.Request, a.RequestRef, a.Permit.GetRequestHash())
	if errs.Is(err, errs.Corrupt) {
		return refuse("the request does not match the permit", err)
	} else if err != nil {
		return nil, nil, err
	}
	// Only now, with the request checked, do its secrets come out of
	// their seals, each checked against its commitment again.
	body, secrets, err := p.reveal(taskID, a, body)
	if err != nil {
		return refuse("a secret parameter does not open", err)
	}
	entry, err := p.cfg.Tools.Lookup(ctx, p.log, tenant, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		return refuse("the tool is not registered here", err)
	} else if err != nil {
		return nil, nil, err
	}
	ad, err := p.adapterFor(entry.Tool)
	if err != nil {
		return refuse("no adapter for the tool", err)
	}
	return &prepared{
		// The attempt is the next one, which dispatch records before the call.
		Request: adapter.Request{TaskID: taskID, ActionID: a.ActionId, OpKey: a.OpKey, Tool: entry.Tool.Contract, Body: body,
			RequestHash: a.Permit.GetRequestHash(), Attempt: a.Attempt + 1},
		adapter: ad,
		result:  entry.ResultSchema,
		secrets: secrets,
		breaker: breakerKey(entry.Tool.Tenant, entry.Tool.Contract),
		limit:   limitKey(entry.Tool.Tenant, tenant, entry.Tool.Contract),
	}, nil, nil
}

// prepared is a call checked and ready to go.
type prepared struct {
	adapter.Request
	// adapter makes the call (adapterFor).
	adapter adapter.Adapter
	// result checks a successful result; nil when the tool declares no
	// result schema.
	result *action.Schema
	// secrets are the clear values in Body, which a tool's answer must
	// not carry into the log (redact).
	secrets []string
	// breaker is the circuit breaker the call counts against (breakerKey).
	breaker string
	// limit is what the call counts against in the tool's limits
	// (limitKey).
	limit string
}

// adapterFor picks the adapter for a registered tool: a tenant's http,
// model or mcp tool's calls go over connections of their own, under the egress
// rule.
func (p *Plane) adapterFor(t *stewardv1.Tool) (adapter.Adapter, error) {
	ad, err := p.cfg.Adapters.For(t.Contract)
	switch {
	case err != nil || t.Tenant == "":
		return ad, err
	case t.Contract.GetHttp() != nil:
		return p.tenantHTTP, nil
	case t.Contract.GetModel() != nil:
		return p.tenantModel, nil
	case t.Contract.GetMcp() != nil:
		return p.tenantMCP, nil
	}
	return ad, nil
}
