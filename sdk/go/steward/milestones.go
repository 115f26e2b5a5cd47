package steward

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ReportProgress says how far one of the task's milestones has come
// (docs/milestones.md): percent 0–100 and a note. Steward records it only
// when it is news, so a repeat is cheap; 100 marks a milestone no plan
// step names done.
func (c *Client) ReportProgress(ctx context.Context, taskID, milestoneID string, percent uint32, note string) (*stewardv1.ReportProgressResponse, error) {
	return call(ctx, c.retry, c.tasks.ReportProgress, &stewardv1.ReportProgressRequest{TaskId: taskID, MilestoneId: milestoneID, Percent: percent, Note: note})
}
