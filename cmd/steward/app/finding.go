package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/terminal"
)

// findingFlags are what `steward audit finding` records.
type findingFlags struct {
	kind, action, description, requestID string
}

func (f *findingFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kind, "kind", "policy_violation", "finding: what was found (`KIND`: policy_violation)")
	fs.StringVar(&f.action, "action", "", "finding: the `ID` of the action it concerns, if one")
	fs.StringVar(&f.description, "description", "", "finding: what was found, in `TEXT` a person reads")
	fs.StringVar(&f.requestID, "request-id", "", "finding: an `ID` that makes the command safe to repeat")
}

// recordFinding records a finding on the task with AuditService.RecordFinding.
func (c *auditCmd) recordFinding() error {
	f := c.finding
	kind := stewardv1.FindingKind(stewardv1.FindingKind_value["FINDING_KIND_"+strings.ToUpper(f.kind)])
	switch {
	case c.taskID == "":
		return errors.New("audit finding: --task is required")
	case f.description == "":
		return errors.New("audit finding: --description is required: say what you found")
	case kind == stewardv1.FindingKind_FINDING_KIND_UNSPECIFIED:
		return fmt.Errorf("audit finding: --kind %q is not a kind of finding; use policy_violation", f.kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, hc, err := c.dial()
	if err != nil {
		return err
	}
	client := stewardv1connect.NewAuditServiceClient(hc, base)
	resp, err := client.RecordFinding(ctx, connect.NewRequest(&stewardv1.RecordFindingRequest{
		TaskId: c.taskID, RequestId: f.requestID, Kind: kind, ActionId: f.action, Description: f.description,
	}))
	if err != nil {
		return fmt.Errorf("record finding on %s at %s: %w", c.taskID, base, err)
	}
	got := resp.Msg.Finding
	verb := "recorded"
	if !resp.Msg.Created {
		verb = "already recorded"
	}
	fmt.Fprintf(c.stdout, "%s finding %s on task %s by %s\n", verb, terminal.EscapeLine(got.GetFindingId()), terminal.EscapeLine(c.taskID), terminal.EscapeLine(got.GetRecordedBy()))
	return nil
}
