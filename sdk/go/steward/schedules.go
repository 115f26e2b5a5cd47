package steward

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Schedules (docs/schedules.md): tasks made again and again from one
// template, on a cron or an interval.

// CreateSchedule starts a schedule. Its request id is req's, or a new one,
// so that a retry after a lost answer finds the schedule the lost attempt
// made (created false).
func (c *Client) CreateSchedule(ctx context.Context, req *stewardv1.CreateScheduleRequest) (*stewardv1.Schedule, bool, error) {
	req.RequestId = c.orNew(req.RequestId)
	resp, err := call(ctx, c.retry, c.schedules.CreateSchedule, req)
	return resp.GetSchedule(), resp.GetCreated(), err
}

// GetSchedule reads a schedule with its recent firings and their runs.
func (c *Client) GetSchedule(ctx context.Context, id string) (*stewardv1.Schedule, error) {
	resp, err := call(ctx, c.retry, c.schedules.GetSchedule, &stewardv1.GetScheduleRequest{ScheduleId: id})
	return resp.GetSchedule(), err
}

// ListSchedules reads one page of the caller's tenant's schedules.
func (c *Client) ListSchedules(ctx context.Context, req *stewardv1.ListSchedulesRequest) (*stewardv1.ListSchedulesResponse, error) {
	return call(ctx, c.retry, c.schedules.ListSchedules, req)
}

// PauseSchedule stops a schedule firing until ResumeSchedule.
func (c *Client) PauseSchedule(ctx context.Context, id, reason string) (*stewardv1.Schedule, error) {
	resp, err := call(ctx, c.retry, c.schedules.PauseSchedule, &stewardv1.PauseScheduleRequest{ScheduleId: id, Reason: reason})
	return resp.GetSchedule(), err
}

// ResumeSchedule lets a paused schedule fire again, from now.
func (c *Client) ResumeSchedule(ctx context.Context, id, reason string) (*stewardv1.Schedule, error) {
	resp, err := call(ctx, c.retry, c.schedules.ResumeSchedule, &stewardv1.ResumeScheduleRequest{ScheduleId: id, Reason: reason})
	return resp.GetSchedule(), err
}

// DeleteSchedule ends a schedule for good; its runs go on.
func (c *Client) DeleteSchedule(ctx context.Context, id, reason string) (*stewardv1.Schedule, error) {
	resp, err := call(ctx, c.retry, c.schedules.DeleteSchedule, &stewardv1.DeleteScheduleRequest{ScheduleId: id, Reason: reason})
	return resp.GetSchedule(), err
}

// RevokeScheduleCredential revokes a schedule's credential, for its
// creator or an operator: the schedule stops, and its runs may not act
// further. Revoking it again answers it unchanged, so a retry is safe.
func (c *Client) RevokeScheduleCredential(ctx context.Context, id, reason string) (*stewardv1.CredentialState, error) {
	resp, err := call(ctx, c.retry, c.governance.RevokeCredential, &stewardv1.RevokeCredentialRequest{ScheduleId: id, Reason: reason})
	return resp.GetCredential(), err
}
