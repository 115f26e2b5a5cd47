package state

import (
	"context"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Reading content back: a tool's result (GetResult) and the bytes of an
// artifact Steward stores (GetArtifactContent). Both check, before
// anything is sent, the caller's right to the task (mayRead), the size,
// and that the bytes hash to what the log recorded: a mismatch is
// DataLoss, and logged, because the log and the store disagree and a
// person has to look.
const (
	// ArtifactChunkBytes is the size of each GetArtifactContent message's
	// chunk: well under every client's message limit.
	ArtifactChunkBytes = 64 << 10
	// MaxArtifactContent is the largest artifact GetArtifactContent
	// serves. Content is read whole and checked before its first byte is
	// sent, so this bounds what one call holds in memory; it is the
	// largest message the embedded bus stores (pkg/embedded), and so the
	// largest blob that can be in the store.
	MaxArtifactContent = 8 << 20
)

// storedPrefix starts the URI of content in Steward's results store.
const storedPrefix = "kv://" + action.ResultBucket + "/"

// GetResult returns what an action's tool answered — the inline result of
// a small one, else the stored bytes its outcome names, a settled unknown
// outcome's included — after checking the caller's right to the task, the
// size (at most action.MaxResult) and the hash the outcome records.
func (s *queryService) GetResult(ctx context.Context, req *connect.Request[stewardv1.GetResultRequest]) (*connect.Response[stewardv1.GetResultResponse], error) {
	taskID, actionID := req.Msg.TaskId, req.Msg.ActionId
	if err := checkTaskID(taskID); err != nil {
		return nil, err
	}
	if actionID == "" {
		return nil, errs.Field("action_id", "is required")
	}
	if err := s.plane.readable(ctx, rpc.Caller(ctx), taskID); err != nil {
		return nil, err
	}
	got, err := s.plane.viewAction(ctx, taskID, actionID)
	if err != nil {
		return nil, err
	}
	o := got.Action.GetOutcome()
	if o.GetResultHash() == "" {
		return nil, errs.New(errs.NotFound, "action %s of task %s has no result: it is %s", actionID, taskID, enumWords(got.Action.Status.String(), "ACTION_STATUS_"))
	}
	data, err := s.plane.result(ctx, taskID, actionID, o)
	if err != nil {
		return nil, err
	}
	v := &structpb.Value{}
	if err := protojson.Unmarshal(data, v); err != nil {
		// Every writer checks a result is JSON before keeping it.
		s.plane.logger.ErrorContext(ctx, "a stored result is not JSON", "task", taskID, "action", actionID, "result_hash", o.ResultHash, "err", err)
		return nil, errs.New(errs.Corrupt, "the result of action %s is not JSON: %v", actionID, err)
	}
	return connect.NewResponse(&stewardv1.GetResultResponse{Result: v, ResultHash: o.ResultHash, SizeBytes: int64(len(data))}), nil
}

// result reads an outcome's result: inline, or from the results store,
// checked against its hash either way.
func (p *Plane) result(ctx context.Context, taskID, actionID string, o *stewardv1.Outcome) ([]byte, error) {
	if len(o.Result) == 0 && p.cfg.Results == nil {
		return nil, errs.New(errs.FailedPrecondition, "the result of action %s is stored at %s, and this state plane has no results store", actionID, o.ResultRef)
	}
	// A nil store reads an inline result (action.Store.Result).
	data, err := p.cfg.Results.Result(ctx, o.Result, o.ResultRef, o.ResultHash)
	if errs.Is(err, errs.Corrupt) {
		p.logger.ErrorContext(ctx, "a result fails its check against the log", "task", taskID, "action", actionID, "result_ref", o.ResultRef, "result_hash", o.ResultHash, "err", err)
	}
	if err != nil {
		return nil, err
	}
	if len(data) > action.MaxResult {
		return nil, errs.New(errs.TooLarge, "the result of action %s is %d bytes; a tool result is at most %d", actionID, len(data), action.MaxResult)
	}
	return data, nil
}

// GetArtifactContent streams one version of an artifact whose content
// Steward stores (kv://STEWARD_RESULTS/…): first the artifact's record,
// then the content in chunks of ArtifactChunkBytes. The content is read
// whole and checked against the artifact's size and sha256 before the
// first message goes out, so a client never receives bytes that fail the
// check, and a failure is an error rather than a stream cut short.
func (s *queryService) GetArtifactContent(ctx context.Context, req *connect.Request[stewardv1.GetArtifactContentRequest], stream *connect.ServerStream[stewardv1.GetArtifactContentResponse]) error {
	taskID, name := req.Msg.TaskId, req.Msg.Name
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	if name == "" {
		return errs.Field("name", "is required")
	}
	if err := s.plane.readable(ctx, rpc.Caller(ctx), taskID); err != nil {
		return err
	}
	var a *stewardv1.Artifact
	err := s.plane.read(ctx, taskID, func(views *Projection) (err error) {
		a, err = views.artifact(taskID, name, req.Msg.Version)
		return err
	})
	if err != nil {
		return err
	}
	data, err := s.plane.artifactContent(ctx, taskID, a)
	if err != nil {
		return err
	}
	// An empty artifact is one message: the record, with no chunk.
	msg := &stewardv1.GetArtifactContentResponse{Artifact: a}
	for {
		n := min(len(data), ArtifactChunkBytes)
		msg.Chunk, data = data[:n], data[n:]
		if err := stream.Send(msg); err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		msg = &stewardv1.GetArtifactContentResponse{}
	}
}

// artifactContent reads an artifact's content from the results store and
// checks it against the artifact's sha256 and size.
func (p *Plane) artifactContent(ctx context.Context, taskID string, a *stewardv1.Artifact) ([]byte, error) {
	ref := task.ArtifactRef(a)
	switch {
	case !strings.HasPrefix(a.Uri, storedPrefix):
		return nil, errs.New(errs.FailedPrecondition, "artifact %s was submitted by reference: Steward does not hold its content; read it at %s and check its sha256 %s", ref, errs.Quote(a.Uri), a.Sha256)
	case p.cfg.Results == nil:
		return nil, errs.New(errs.FailedPrecondition, "artifact %s is stored at %s, and this state plane has no results store", ref, a.Uri)
	case a.SizeBytes > MaxArtifactContent:
		return nil, errs.New(errs.TooLarge, "artifact %s is %d bytes; GetArtifactContent serves at most %d", ref, a.SizeBytes, MaxArtifactContent)
	}
	data, err := p.cfg.Results.Get(ctx, a.Uri, a.Sha256)
	if err == nil && int64(len(data)) != a.SizeBytes {
		err = errs.New(errs.Corrupt, "%s holds %d bytes, the artifact records %d", a.Uri, len(data), a.SizeBytes)
	}
	if errs.Is(err, errs.Corrupt) {
		p.logger.ErrorContext(ctx, "an artifact's content fails its check against the log", "task", taskID, "artifact", ref, "uri", a.Uri, "sha256", a.Sha256, "err", err)
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

// readable returns once the views have caught up with the task's last
// event, or an error: the task has no view, or who may not read its
// content (mayRead).
func (p *Plane) readable(ctx context.Context, who rpc.Identity, taskID string) error {
	if err := p.caughtUp(ctx, taskID); err != nil {
		return err
	}
	self, ok := p.views.parties(taskID)
	if !ok {
		return noView(taskID)
	}
	return mayRead(who, self, p.views.parties)
}

// parties returns the principals the task names (partiesOf), or false if
// the projection holds no valid view of it.
func (p *Projection) parties(taskID string) (parties, bool) {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.tasks[taskID]
	if !ok || p.broken[taskID] != "" {
		return parties{}, false
	}
	return partiesOf(v.task), true
}

// artifact returns a copy of one version of the task's artifact name, the
// latest when version is zero; NotFound if there is none.
func (p *Projection) artifact(taskID, name string, version uint32) (*stewardv1.Artifact, error) {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, err := p.whole(taskID)
	if err != nil {
		return nil, err
	}
	var found *stewardv1.Artifact
	for _, a := range v.task.Artifacts {
		if a.Name == name && (version == 0 || a.Version == version) {
			found = a // versions are in order: the last is the latest
		}
	}
	switch {
	case found != nil:
		return proto.CloneOf(found), nil
	case version == 0:
		return nil, errs.New(errs.NotFound, "task %s has no artifact %s", taskID, errs.Quote(name))
	}
	return nil, errs.New(errs.NotFound, "task %s has no version %d of artifact %s", taskID, version, errs.Quote(name))
}
