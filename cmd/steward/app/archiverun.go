package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/auditbundle"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// archiveRun is one `steward archive run`: it finds the trees of ended
// tasks past their tenant's retention, archives each as a verified
// bundle, and purges what it archived from the hot streams.
type archiveRun struct {
	stdout    io.Writer
	archive   *archive.Archive
	purger    *archive.Purger // nil on a dry run
	retention archive.Retention
	now       time.Time
	limit     int64 // bytes of one bundle, at most

	query     stewardv1connect.QueryServiceClient
	audit     stewardv1connect.AuditServiceClient
	gov       stewardv1connect.GovernanceServiceClient
	schedules stewardv1connect.ScheduleServiceClient

	key         *stewardv1.BundleKey
	refusedSaid bool // RefusesPurges printed
	// Counts, for the summary.
	trees, tasks, events, kept int
}

// run archives every due tree of the caller's tenant.
func (r *archiveRun) run(ctx context.Context) error {
	if err := r.pending(ctx); err != nil {
		return err
	}
	ids, err := r.candidates(ctx)
	if err != nil {
		return err
	}
	key, err := r.gov.GetCredentialKey(ctx, connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
	if err != nil {
		return fmt.Errorf("credential key: %w", err)
	}
	r.key = &stewardv1.BundleKey{KeyId: key.Msg.KeyId, PublicKey: key.Msg.PublicKey}
	done := map[string]bool{}
	for _, id := range ids {
		if done[id] {
			continue // archived, or kept, with another of its tree
		}
		if err := r.tree(ctx, id, done); err != nil {
			return err
		}
	}
	verb := "archived"
	if r.purger == nil {
		verb = "would archive"
	}
	fmt.Fprintf(r.stdout, "%s %d trees (%d tasks, %d events); kept %d\n", verb, r.trees, r.tasks, r.events, r.kept)
	return nil
}

// candidates are the ended tasks the caller's tenant has that ended
// before their tenant's retention: each one's tree is looked at whole.
func (r *archiveRun) candidates(ctx context.Context) ([]string, error) {
	req := &stewardv1.ListTasksRequest{PageSize: 1000, Statuses: []stewardv1.TaskStatus{
		stewardv1.TaskStatus_TASK_STATUS_ACCEPTED, stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_CANCELLED}}
	var ids []string
	for {
		resp, err := r.query.ListTasks(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, fmt.Errorf("list ended tasks: %w", err)
		}
		for _, t := range resp.Msg.Tasks {
			if age := r.retention.Age(t.Tenant); age > 0 && r.now.Sub(t.UpdatedAt.AsTime()) >= age {
				ids = append(ids, t.Contract.GetTaskId())
			}
		}
		if req.PageToken = resp.Msg.NextPageToken; req.PageToken == "" {
			return ids, nil
		}
	}
}

// tree archives the tree id is in, if it is due, and marks its tasks done.
func (r *archiveRun) tree(ctx context.Context, id string, done map[string]bool) error {
	b := &stewardv1.AuditBundle{}
	if err := newBundleMerge(b, r.limit).fetch(ctx, r.audit, id); err != nil {
		if connect.CodeOf(err) == connect.CodeNotFound {
			// Purged by an earlier run: the state plane's views may list
			// a task the log no longer holds. One the archive lacks is
			// an error.
			if _, _, aerr := r.archive.Bundle(ctx, id); aerr == nil {
				done[id] = true
				return nil
			}
		}
		return fmt.Errorf("bundle of %s: %w", id, err)
	}
	tasks, err := archive.Fold(b)
	if err != nil {
		return err
	}
	for tid := range tasks {
		done[tid] = true
	}
	why := archive.Due(tasks, b.Withheld, r.now, r.retention)
	if why == "" {
		why, err = r.needed(ctx, tasks)
		if err != nil {
			return err
		}
	}
	b.Keys = []*stewardv1.BundleKey{r.key}
	if why == "" {
		if rep := auditbundle.Verify(ctx, b, BundleChecks(nil)); !rep.OK() {
			why = "its bundle does not verify: " + rep.Failures[0].String()
		}
	}
	if why != "" {
		r.kept++
		fmt.Fprintf(r.stdout, "kept %s: %s\n", id, why)
		return nil
	}
	return r.archiveTree(ctx, id, tasks, b)
}

// archiveTree writes b to the archive, then purges its tasks' events.
func (r *archiveRun) archiveTree(ctx context.Context, id string, tasks map[string]*stewardv1.Task, b *stewardv1.AuditBundle) error {
	events := 0
	for _, bt := range b.Tasks {
		events += len(bt.Events)
	}
	r.trees, r.tasks, r.events = r.trees+1, r.tasks+len(tasks), r.events+events
	if r.purger == nil {
		fmt.Fprintf(r.stdout, "would archive %s: %d tasks, %d events\n", id, len(tasks), events)
		return nil
	}
	if err := r.archive.Put(ctx, id, tasks[id].Tenant, b); err != nil {
		return err
	}
	ids := slices.Sorted(maps.Keys(tasks))
	if err := r.archive.MarkPending(ctx, id, ids); err != nil {
		return err
	}
	if _, err := r.purger.PurgeTree(ctx, archive.HeldIn(b)); errors.Is(err, archive.ErrChanged) {
		// A task of the tree got an event after its bundle was read: the
		// log keeps it, and the next run archives the tree again.
		r.kept++
		fmt.Fprintf(r.stdout, "kept %s: %v\n", id, err)
		return nil
	} else if err != nil {
		return fmt.Errorf("archived %s, kept on the log: %w", id, err)
	}
	if err := r.purgeContent(ctx, id, ids); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "archived %s: %d tasks, %d events\n", id, len(tasks), events)
	return nil
}

// pending finishes the purges an earlier run left under way: the content
// of each tree whose events it purged before it stopped.
func (r *archiveRun) pending(ctx context.Context) error {
	if r.purger == nil {
		return nil
	}
	c, err := r.archive.FinishPending(ctx, r.purger)
	r.refused(c)
	return err
}

// purgeContent purges the stored content of the tree's tasks.
func (r *archiveRun) purgeContent(ctx context.Context, root string, ids []string) error {
	c, err := r.archive.PurgeContent(ctx, r.purger, root, ids)
	r.refused(c)
	return err
}

// refused says, once a run, which content buckets refuse purges.
func (r *archiveRun) refused(c archive.Content) {
	if len(c.Refused) > 0 && !r.refusedSaid {
		r.refusedSaid = true
		fmt.Fprintln(r.stdout, archive.RefusesPurges(c.Refused))
	}
}

// needed says why a live objective or schedule still needs a task of the
// tree, or "": a task of an open objective counts towards it, and a
// schedule's newest run is read by its next (its previous_task_id).
func (r *archiveRun) needed(ctx context.Context, tasks map[string]*stewardv1.Task) (string, error) {
	for _, id := range slices.Sorted(maps.Keys(tasks)) {
		t := tasks[id]
		if o := t.Contract.GetObjectiveId(); o != "" {
			resp, err := r.query.GetObjective(ctx, connect.NewRequest(&stewardv1.GetObjectiveRequest{ObjectiveId: o, PageSize: 1}))
			if err != nil && errs.CodeOf(err) != errs.NotFound && connect.CodeOf(err) != connect.CodeNotFound {
				return "", fmt.Errorf("objective %s: %w", o, err)
			}
			if err == nil && resp.Msg.Objective.GetStatus() == stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN {
				return fmt.Sprintf("task %s works towards objective %s, still open", id, o), nil
			}
		}
		if s := t.GetScheduleRun().GetScheduleId(); s != "" {
			resp, err := r.schedules.GetSchedule(ctx, connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: s}))
			if err != nil && connect.CodeOf(err) != connect.CodeNotFound {
				return "", fmt.Errorf("schedule %s: %w", s, err)
			}
			if err == nil && resp.Msg.Schedule.GetLastTaskId() == id {
				return fmt.Sprintf("task %s is the newest run of schedule %s, which its next run reads", id, s), nil
			}
		}
	}
	return "", nil
}
