package a2a

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/a2aproject/a2a-go/a2a"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// follow folds the task's events from its first, read over WatchTask, and
// once the watch is live calls each with the task as of every event (the
// first time with its whole history folded), until each says done, the
// watch ends or ctx does. Folding the events themselves, rather than
// asking GetTask after each, cannot miss the last change to a projection
// that has not caught up.
func (c clients) follow(ctx context.Context, taskID string, each func(*stewardv1.Task) (bool, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID}))
	if err != nil {
		return err
	}
	defer func() { _ = stream.Close() }()
	t := &stewardv1.Task{}
	var seq, live uint64
	started := false
	for stream.Receive() {
		msg := stream.Msg()
		if rec := msg.GetRecord(); rec != nil {
			if err := task.Apply(t, rec.Event, rec.Sequence); err != nil {
				return fmt.Errorf("task %s at %d: %w", taskID, rec.Sequence, err)
			}
			seq = rec.Sequence
		} else {
			live, started = msg.LastSequence, true
		}
		if !started || seq < live {
			continue
		}
		if done, err := each(t); err != nil || done {
			return err
		}
	}
	return stream.Err()
}

// stream sends the task's A2A events from now on: the task as it stands,
// then each new artifact and each change of status, until a final one.
func (c clients) stream(ctx context.Context, taskID string, send func(a2a.Event) error) error {
	sent := map[string]bool{}
	var last a2a.TaskStatus
	first := true
	return c.follow(ctx, taskID, func(t *stewardv1.Task) (bool, error) {
		if first {
			first = false
			v, err := c.view(ctx, t)
			if err != nil {
				return false, err
			}
			for _, a := range v.Artifacts {
				sent[string(a.ID)] = true
			}
			last = v.Status
			return final(last.State), send(v)
		}
		id, ctxID := a2a.TaskID(taskID), contextOf(t)
		for _, art := range task.LatestArtifacts(t) {
			if sent[task.ArtifactRef(art)] {
				continue
			}
			sent[task.ArtifactRef(art)] = true
			left := int64(MaxInlineAnswerBytes)
			a, err := c.artifact(ctx, taskID, art, &left)
			if err != nil {
				return false, err
			}
			if err := send(&a2a.TaskArtifactUpdateEvent{TaskID: id, ContextID: ctxID, Artifact: a, LastChunk: true}); err != nil {
				return false, err
			}
		}
		st := status(t)
		if st.State == last.State && words(st) == words(last) {
			return false, nil
		}
		last = st
		return final(st.State), send(&a2a.TaskStatusUpdateEvent{TaskID: id, ContextID: ctxID, Status: st, Final: final(st.State)})
	})
}

// words is what a status's message says.
func words(st a2a.TaskStatus) string {
	if st.Message == nil || len(st.Message.Parts) == 0 {
		return ""
	}
	if p, ok := st.Message.Parts[0].(a2a.TextPart); ok {
		return p.Text
	}
	return ""
}
