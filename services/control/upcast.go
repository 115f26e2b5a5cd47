package control

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/requestid"
)

// This file is the one place where the control plane reads what earlier
// builds wrote (docs/compatibility.md): a task lives across upgrades, and
// a client's retry may cross one. Every rule here is for a shape that
// cannot be made today's, so each is a named function the plane calls; no
// record is rewritten on read.

// olderTask returns the id of the task principal made with requestID
// before request ids were the caller's own (082c9df, 2026-11-30: its id
// was then derived from the request id alone, requestid.LegacyTaskID), and
// whether there is one, so that a retry across the upgrade finds it. A
// tenant's tasks were all made with tenants: none is an older build's.
func (p *Plane) olderTask(ctx context.Context, s requestid.Scope, principal, requestID string) (id string, ok bool, err error) {
	if requestID == "" || s.Tenant != "" {
		return "", false, nil
	}
	old := requestid.LegacyTaskID(requestID)
	recs, err := p.log.Read(ctx, old)
	if err != nil {
		return "", false, err
	}
	if len(recs) > 0 && recs[0].Event.GetActor().GetPrincipal() == principal && recs[0].Event.GetTaskCreated().GetRequestId() == requestID {
		return old, true, nil
	}
	return "", false, nil
}

// olderUse is the use of requestID on taskID whose command an earlier
// build recorded under requestid.LegacyEventID (before 082c9df, as for
// olderTask): a retry across the upgrade, if this caller sent this command
// then, answered from that event; otherwise the id is taken.
func (p *Plane) olderUse(ctx context.Context, principal, command, taskID, requestID string) (*use, error) {
	legacy := requestid.LegacyEventID(taskID, requestID)
	ev, err := commandEvent(ctx, p.log, taskID, legacy)
	if err != nil {
		return nil, err
	}
	if ev.GetActor().GetPrincipal() != principal || !commandRecords(command, ev.GetType()) {
		return nil, errs.New(errs.AlreadyExists, "request id %s was used on task %s before request ids were the caller's own, for %s by %s: use a new one",
			errs.Quote(requestID), taskID, ev.GetType(), ev.GetActor().GetPrincipal())
	}
	return &use{id: legacy}, nil
}

// pauserName names who paused a task, for a refusal's message: a pause
// recorded before who paused was (a4d9431, 2026-12-01) names no one.
func pauserName(principal string) string {
	if principal == "" {
		return "someone (recorded before who paused was)"
	}
	return principal
}

// uncompiledCriterion is what a criterion that does not compile is judged:
// failed, with CEL's message. Only a contract an earlier build accepted
// holds one (today CreateTask compiles every criterion), and its task is
// judged, not refused.
func uncompiledCriterion(err error) string { return "does not compile: " + err.Error() }
