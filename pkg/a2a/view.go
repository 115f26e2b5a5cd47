package a2a

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"github.com/a2aproject/a2a-go/a2a"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// MaxInlineArtifactBytes bounds the content of one artifact sent inline;
// a larger one is described (name, digest, size) and read over the
// Connect API (GetArtifactContent).
const MaxInlineArtifactBytes = 1 << 20

// MaxInlineAnswerBytes bounds the content of all the artifacts one answer
// or stream event sends inline: a task may hold hundreds, and an answer
// is built in memory whole. Past it, an artifact is described as one too
// large is.
const MaxInlineAnswerBytes = 4 << 20

// stateOf is the A2A state of t and the status message that says more.
// A2A has fewer states than Steward: every state in which the work goes on
// without the A2A client (approvals, a pause, a suspension, settling an
// unknown outcome, a produced result awaiting its acceptance owner) is
// working, with Steward's status and reason as the message.
func stateOf(t *stewardv1.Task) (a2a.TaskState, string) {
	switch t.Status {
	case stewardv1.TaskStatus_TASK_STATUS_UNSPECIFIED, stewardv1.TaskStatus_TASK_STATUS_PENDING:
		return a2a.TaskStateSubmitted, ""
	case stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT:
		q := t.GetOpenInput().GetQuestion()
		if c := t.GetOpenInput().GetChoices(); len(c) > 0 {
			q += " (one of: " + strings.Join(c, ", ") + ")"
		}
		return a2a.TaskStateInputRequired, q
	case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED:
		return a2a.TaskStateCompleted, t.StatusReason
	case stewardv1.TaskStatus_TASK_STATUS_FAILED:
		return a2a.TaskStateFailed, t.StatusReason
	case stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
		return a2a.TaskStateCanceled, t.StatusReason
	case stewardv1.TaskStatus_TASK_STATUS_RUNNING:
		return a2a.TaskStateWorking, t.StatusReason
	}
	words := task.StatusName(t.Status)
	if t.StatusReason != "" {
		words += ": " + t.StatusReason
	}
	return a2a.TaskStateWorking, words
}

// final reports whether a stream ends at s: the task ended, or waits for
// the A2A client's next message.
func final(s a2a.TaskState) bool {
	return s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

// contextOf is t's A2A context: the task it was delegated from, or itself
// for a task that was not.
func contextOf(t *stewardv1.Task) string {
	if p := t.GetContract().GetParentTaskId(); p != "" {
		return p
	}
	return t.GetContract().GetTaskId()
}

// status is t's A2A status.
func status(t *stewardv1.Task) a2a.TaskStatus {
	state, words := stateOf(t)
	st := a2a.TaskStatus{State: state}
	if ts := t.GetUpdatedAt(); ts != nil {
		at := ts.AsTime()
		st.Timestamp = &at
	}
	if words != "" {
		id := t.GetContract().GetTaskId()
		st.Message = &a2a.Message{
			ID: fmt.Sprintf("%s/status/%d", id, t.GetLastSequence()), Role: a2a.MessageRoleAgent,
			TaskID: a2a.TaskID(id), ContextID: contextOf(t), Parts: a2a.ContentParts{a2a.TextPart{Text: words}},
		}
	}
	return st
}

// view is t as an A2A task, its artifacts (the latest version of each
// name) read with the caller's rights.
func (c clients) view(ctx context.Context, t *stewardv1.Task) (*a2a.Task, error) {
	v := &a2a.Task{ID: a2a.TaskID(t.GetContract().GetTaskId()), ContextID: contextOf(t), Status: status(t),
		Metadata: map[string]any{"steward.status": task.StatusName(t.Status)}}
	left := int64(MaxInlineAnswerBytes)
	for _, art := range task.LatestArtifacts(t) {
		a, err := c.artifact(ctx, t.GetContract().GetTaskId(), art, &left)
		if err != nil {
			return nil, err
		}
		v.Artifacts = append(v.Artifacts, a)
	}
	return v, nil
}

// artifact is one artifact version with its content, when the caller may
// read it and it is small enough; otherwise with what describes it. A
// caller who may not read it learns that it exists, not what it holds.
// left is what the answer may still carry inline; what is sent is taken
// from it.
func (c clients) artifact(ctx context.Context, taskID string, art *stewardv1.Artifact, left *int64) (*a2a.Artifact, error) {
	a := &a2a.Artifact{ID: a2a.ArtifactID(task.ArtifactRef(art)), Name: art.Name,
		Metadata: map[string]any{"steward.sha256": art.Sha256, "steward.size_bytes": art.SizeBytes, "steward.version": art.Version}}
	meta := a2a.FileMeta{MimeType: art.MediaType, Name: art.Name}
	if art.Uri == "" {
		// The API leaves out where content is for a caller who may not read it.
		a.Parts = describe(art, "hidden: the caller may not read it")
		return a, nil
	}
	if !strings.HasPrefix(art.Uri, "kv://") {
		a.Parts = a2a.ContentParts{a2a.FilePart{File: a2a.FileURI{FileMeta: meta, URI: art.Uri}}}
		return a, nil
	}
	if art.SizeBytes > MaxInlineArtifactBytes {
		a.Parts = describe(art, fmt.Sprintf("larger than %d bytes: read it with GetArtifactContent", MaxInlineArtifactBytes))
		return a, nil
	}
	if art.SizeBytes > *left {
		a.Parts = describe(art, fmt.Sprintf("past the %d bytes of content one answer carries: read it with GetArtifactContent", MaxInlineAnswerBytes))
		return a, nil
	}
	*left -= art.SizeBytes
	content, err := c.read(ctx, taskID, art)
	if connect.CodeOf(err) == connect.CodePermissionDenied {
		a.Parts = describe(art, "hidden: the caller may not read it")
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	if textual(art.MediaType) {
		a.Parts = a2a.ContentParts{a2a.TextPart{Text: string(content)}}
	} else {
		a.Parts = a2a.ContentParts{a2a.FilePart{File: a2a.FileBytes{FileMeta: meta, Bytes: base64.StdEncoding.EncodeToString(content)}}}
	}
	return a, nil
}

func describe(art *stewardv1.Artifact, why string) a2a.ContentParts {
	return a2a.ContentParts{a2a.DataPart{Data: map[string]any{"name": art.Name, "version": art.Version, "mediaType": art.MediaType,
		"sha256": art.Sha256, "sizeBytes": art.SizeBytes, "content": why}}}
}

func textual(mediaType string) bool {
	base, _, _ := strings.Cut(mediaType, ";")
	return strings.HasPrefix(base, "text/") || base == "application/json" || base == ""
}

// read is an artifact version's bytes, over GetArtifactContent.
func (c clients) read(ctx context.Context, taskID string, art *stewardv1.Artifact) ([]byte, error) {
	stream, err := c.query.GetArtifactContent(ctx, connect.NewRequest(&stewardv1.GetArtifactContentRequest{TaskId: taskID, Name: art.Name, Version: art.Version}))
	if err != nil {
		return nil, err
	}
	defer func() { _ = stream.Close() }()
	var buf bytes.Buffer
	for stream.Receive() {
		buf.Write(stream.Msg().Chunk)
		if buf.Len() > MaxInlineArtifactBytes {
			return nil, fmt.Errorf("artifact %s: more than %d bytes", task.ArtifactRef(art), MaxInlineArtifactBytes)
		}
	}
	return buf.Bytes(), stream.Err()
}
