package control

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

func (p *Plane) ReportProgress(ctx context.Context, principal string, req *stewardv1.ReportProgressRequest) (*stewardv1.ReportProgressResponse, error) {
	return p.progress.ReportProgress(ctx, principal, req)
}
