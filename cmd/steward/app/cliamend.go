package app

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// approvalsAmend answers an approval with other parameters: the action is
// rejected, and one with these parameters is proposed in the approver's
// name, for someone else to approve (docs/approvals.md, "Amend").
func (c *cli) approvalsAmend() *cobra.Command {
	var hash, params, comment string
	cmd := c.verb("amend APPROVAL --hash HASH --params FILE|JSON", "reject an action in favour of the same call with your parameters, which someone else approves", []string{"APPROVAL"}, func(ctx context.Context, s *steward.Client, args []string) error {
		amended, err := paramsArg(params)
		if err != nil {
			return err
		}
		req := &stewardv1.DecideApprovalRequest{ApprovalId: args[0], Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND, Comment: comment, AmendedParams: amended}
		return c.sendDecision(ctx, s, "amend", hash, req)
	})
	cmd.Flags().StringVar(&hash, "hash", "", "the action's `HASH`, as 'approvals show' showed it; required")
	cmd.Flags().StringVar(&params, "params", "", "the parameters the action should have: a JSON object, or the `FILE` that holds one; required")
	cmd.Flags().StringVar(&comment, "comment", "", "why, for the record")
	return cmd
}

// paramsArg reads --params: a JSON object given inline (it starts with
// "{"), or the name of a file that holds one.
func paramsArg(arg string) (*structpb.Struct, error) {
	data := []byte(arg)
	switch {
	case arg == "":
		return nil, usagef("--params is required: the parameters the action should have, as a JSON object or a file holding one")
	case !strings.HasPrefix(strings.TrimSpace(arg), "{"):
		var err error
		if data, err = os.ReadFile(arg); err != nil {
			return nil, usagef("--params: %v", err)
		}
	}
	out := &structpb.Struct{}
	if err := protojson.Unmarshal(data, out); err != nil {
		return nil, usagef("--params is not a JSON object: %v", err)
	}
	return out, nil
}
