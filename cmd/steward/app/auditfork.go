package app

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/audit"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/terminal"
)

// forkLink checks, for a task that is a fork, its link to its parent
// (audit.VerifyFork), reading the parent's events from the server; from a
// file, where the parent is not, it says the link was not checked.
func (c *auditCmd) forkLink(events [][]byte) error {
	first, err := audit.NewReplayer(c.taskID).Next(events[0], 0)
	if err != nil {
		return err
	}
	origin := audit.Fork(first.Event)
	if origin == nil {
		return nil
	}
	where := fmt.Sprintf("fork of task %s at sequence %d", terminal.EscapeLine(origin.ParentTaskId), origin.AtSequence)
	if c.file != "" {
		fmt.Fprintf(c.stdout, "%s: link not checked (the parent's events are not in the file: verify with --task)\n", where)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base, hc, err := c.dial()
	if err != nil {
		return err
	}
	client := stewardv1connect.NewAuditServiceClient(hc, base)
	stream, err := client.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: origin.ParentTaskId}))
	if err != nil {
		return fmt.Errorf("%s: read the parent: %w", where, err)
	}
	defer stream.Close()
	var data [][]byte
	var seqs []uint64
	for stream.Receive() && (len(seqs) == 0 || seqs[len(seqs)-1] < origin.AtSequence) {
		data, seqs = append(data, stream.Msg().Data), append(seqs, stream.Msg().GetRecord().GetSequence())
	}
	if err := stream.Err(); err != nil {
		return fmt.Errorf("%s: read the parent: %w", where, err)
	}
	if err := audit.VerifyFork(origin, data, seqs); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: link verified (the parent's chain to there, the event's hash, the state the fork started from)\n", where)
	return nil
}
