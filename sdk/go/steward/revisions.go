package steward

import (
	"context"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Revisions of a task's contract (docs/revisions.md): one proposes a new
// version with a reason; it takes effect once its accountable owner and,
// where policy asks, a role's holder approve it.

// ReviseContract proposes a new version of a task's contract under
// req.RequestId (chosen when empty, once, so that every retry sends the
// same), and answers with the task and the revision.
func (c *Client) ReviseContract(ctx context.Context, req *stewardv1.ReviseContractRequest) (*stewardv1.ReviseContractResponse, error) {
	req = proto.CloneOf(req)
	req.RequestId = c.orNew(req.RequestId)
	return call(ctx, c.retry, c.tasks.ReviseContract, req)
}

// DecideContractRevision approves or rejects a task's open revision under
// req.RequestId (chosen when empty).
func (c *Client) DecideContractRevision(ctx context.Context, req *stewardv1.DecideContractRevisionRequest) (*stewardv1.DecideContractRevisionResponse, error) {
	req = proto.CloneOf(req)
	req.RequestId = c.orNew(req.RequestId)
	return call(ctx, c.retry, c.tasks.DecideContractRevision, req)
}
