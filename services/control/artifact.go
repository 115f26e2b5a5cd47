package control

import (
	"context"
	"mime"
	"net/url"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Artifact size limits, by default; Config changes them.
const (
	// DefaultMaxInlineArtifact bounds content sent inline: it is stored as
	// one message, well under NATS's default 1 MiB max_payload.
	DefaultMaxInlineArtifact = 512 << 10
	// DefaultMaxReferencedArtifact bounds the declared size of content
	// stored elsewhere. Steward never reads it; the bound catches a size
	// that is surely wrong.
	DefaultMaxReferencedArtifact = 5 << 30
)

// emptySHA256 is the hash of no bytes: the one hash a zero-byte artifact
// may have.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// SubmitArtifact records the next version of an artifact of the task's
// result. Content sent inline is stored in the results store, where
// criteria can read it; content stored elsewhere is named by uri, sha256
// and size_bytes, which Steward records but does not fetch. With a request
// id the call is idempotent (see claimRequestID): a repeat returns the artifact it
// recorded.
func (ac *acceptance) SubmitArtifact(ctx context.Context, principal string, req *stewardv1.SubmitArtifactRequest) (_ *stewardv1.Artifact, _ *stewardv1.Task, err error) {
	a, err := ac.checkArtifact(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	u, err := ac.claimRequestID(ctx, principal, requestid.SubmitArtifact, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	if id != "" {
		// A repeat is answered as it was, even after a revocation since.
		if t, h, err := ac.tasks.Load(ctx, req.TaskId); err == nil && h.Has(id) {
			ev, err := commandEvent(ctx, ac.log, req.TaskId, id)
			if err != nil {
				return nil, nil, err
			}
			return task.FindArtifact(t, task.ArtifactRef(ev.GetArtifactSubmitted().GetArtifact())), t, nil
		}
	}
	if err := ac.notRevoked(ctx, req.TaskId, "submit artifacts"); err != nil {
		return nil, nil, err
	}
	done, err := ac.admitArtifact(ctx, principal, req, a, id)
	if err != nil {
		return nil, nil, err
	}
	var seq uint64 // of the event, once recorded: what the admission is told
	defer func() { done(seq) }()
	var built *stewardv1.Artifact
	t, err := ac.apply(ctx, req.TaskId, func(t *stewardv1.Task) (ev *stewardv1.Event, err error) {
		ev, built, err = ac.artifactEvent(t, principal, req, a, id)
		return ev, err
	})
	if err != nil {
		return nil, nil, err
	}
	if got := task.FindArtifact(t, task.ArtifactRef(built)); proto.Equal(got, built) {
		seq = t.LastSequence
		return got, t, nil
	}
	// A repeat (the claim saw the same request): the event was on the
	// log already, with its own version.
	ev, err := commandEvent(ctx, ac.log, req.TaskId, id)
	if err != nil {
		return nil, nil, err
	}
	return task.FindArtifact(t, task.ArtifactRef(ev.GetArtifactSubmitted().GetArtifact())), t, nil
}

// admitArtifact admits what req (as a) adds to Steward's store against the
// content quotas, charged to principal, the submitter, and stores inline
// content. First it runs the fold's check on the event the submission
// would record, so that an artifact the task will refuse (it has ended,
// say) stores nothing and is counted nowhere. It sets a's uri to inline
// content's place in the store. done is the admission's (admit).
func (ac *acceptance) admitArtifact(ctx context.Context, principal string, req *stewardv1.SubmitArtifactRequest, a *stewardv1.Artifact, id string) (done func(seq uint64), err error) {
	inline := len(req.Content) > 0
	if !storedHere(a) && !inline {
		return func(uint64) {}, nil // content elsewhere: nothing stored here
	}
	if inline && ac.results == nil {
		return nil, errs.New(errs.FailedPrecondition, "this control plane keeps no artifact content: submit it by reference (uri, sha256, size_bytes)")
	}
	if inline {
		a.Uri = ac.results.RefOf(req.TaskId, a.Sha256) // where Put stores it: the check's uri
	}
	t, _, err := ac.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, err
	}
	ev, _, err := ac.artifactEvent(t, principal, req, a, id)
	if err == nil {
		err = task.Check(t, ev)
	}
	if err != nil {
		return nil, err
	}
	done, err = ac.quota.admitOn(ctx, req.TaskId, func(u *usage, r running) (owner, tally) {
		return owner{tenant: r.owner.tenant, principal: principal}, tally{contentBytes: u.adds(a)}
	})
	if err != nil || !inline {
		return done, err
	}
	// Stored before the event: an orphan blob after a failed append is
	// harmless, an event naming a missing blob is not.
	if a.Uri, _, err = ac.results.Put(ctx, req.TaskId, req.Content); err != nil {
		done(0)
		return nil, err
	}
	return done, nil
}

// artifactEvent builds the ArtifactSubmitted that submits a to t, as its
// next version, and returns it with the artifact it records.
func (ac *acceptance) artifactEvent(t *stewardv1.Task, principal string, req *stewardv1.SubmitArtifactRequest, a *stewardv1.Artifact, id string) (*stewardv1.Event, *stewardv1.Artifact, error) {
	now := ac.now().UTC()
	built := proto.CloneOf(a)
	built.Version = uint32(len(task.ArtifactVersions(t, a.Name))) + 1
	built.SubmittedAt, built.SubmittedBy = timestamppb.New(now), principal
	ev, err := ac.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: ac.actor(principal), CorrelationID: req.RequestId, Time: now},
		&stewardv1.ArtifactSubmitted{Artifact: built})
	return ev, built, err
}

// checkArtifact checks a request and returns the artifact it describes,
// without its version, time and submitter. For inline content it computes
// the hash and size; the uri is set once the content is stored.
func (ac *acceptance) checkArtifact(ctx context.Context, req *stewardv1.SubmitArtifactRequest) (*stewardv1.Artifact, error) {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return nil, err
	}
	for _, err := range []error{
		checkText("name", req.Name, MaxRefLen, true),
		checkText("media_type", req.MediaType, MaxRefLen, true),
		checkText("action_id", req.ActionId, MaxRefLen, false),
		checkText("uri", req.Uri, MaxTextLen, false),
	} {
		if err != nil {
			return nil, err
		}
	}
	if strings.Contains(req.Name, "@") {
		return nil, errs.Field("name", "%s contains '@', which separates a name from its version (report@2)", errs.Quote(req.Name))
	}
	if err := checkMediaType(req.MediaType); err != nil {
		return nil, err
	}
	a := &stewardv1.Artifact{Name: req.Name, MediaType: req.MediaType, ActionId: req.ActionId}
	switch {
	case len(req.Content) > 0 && req.Uri != "":
		return nil, errs.Field("uri", "give the content inline or a uri to it, not both")
	case len(req.Content) > 0:
		if n := int64(len(req.Content)); n > ac.maxInline {
			return nil, &errs.Error{Code: errs.TooLarge, Field: "content",
				Message: sizeMessage(n, ac.maxInline) + " for content sent inline: store it elsewhere and submit it by reference (uri, sha256, size_bytes)"}
		}
		a.Sha256, a.SizeBytes = action.RequestHash(req.Content), int64(len(req.Content))
		if req.Sha256 != "" && strings.ToLower(req.Sha256) != a.Sha256 {
			return nil, errs.Field("sha256", "%s is not the hash of the content, %s", errs.Quote(req.Sha256), a.Sha256)
		}
		if req.SizeBytes != 0 && req.SizeBytes != a.SizeBytes {
			return nil, errs.Field("size_bytes", "%d is not the size of the content, %d bytes", req.SizeBytes, a.SizeBytes)
		}
		return a, nil
	case req.Uri == "":
		return nil, errs.Field("content", "is required: give the content inline, or a uri with sha256 and size_bytes")
	}
	if u, err := url.Parse(req.Uri); err != nil || u.Scheme == "" {
		return nil, errs.Field("uri", "%s is not an absolute URI", errs.Quote(req.Uri))
	}
	a.Uri, a.Sha256, a.SizeBytes = req.Uri, req.Sha256, req.SizeBytes
	switch {
	case req.Sha256 == "":
		return nil, errs.Field("sha256", "is required with a uri: the hex SHA-256 of the content")
	case !task.ValidSHA256(req.Sha256):
		return nil, errs.Field("sha256", "%s is not 64 lowercase hex digits", errs.Quote(req.Sha256))
	case req.SizeBytes < 0:
		return nil, errs.Field("size_bytes", "must not be negative")
	case req.SizeBytes == 0 && req.Sha256 != emptySHA256:
		// Zero is also what a client that forgot the field sends.
		return nil, errs.Field("size_bytes", "is required with a uri: the size of the content in bytes")
	case req.SizeBytes > ac.maxReferenced:
		return nil, &errs.Error{Code: errs.TooLarge, Field: "size_bytes", Message: sizeMessage(req.SizeBytes, ac.maxReferenced)}
	}
	if ac.inStore(req.Uri) {
		if err := ac.holds(ctx, req.TaskId, req.Uri); err != nil {
			return nil, err
		}
		// Criteria read what is in the store: make sure it is what the
		// client says.
		data, err := ac.results.Get(ctx, req.Uri, req.Sha256)
		if errs.Is(err, errs.Corrupt) {
			return nil, errs.Field("uri", "%s does not hold content with sha256 %s", errs.Quote(req.Uri), errs.Quote(req.Sha256))
		}
		if err != nil {
			return nil, err
		}
		if int64(len(data)) != req.SizeBytes {
			return nil, errs.Field("size_bytes", "%d is not the size of the content at %s, %d bytes", req.SizeBytes, errs.Quote(req.Uri), len(data))
		}
	}
	return a, nil
}

// inStore reports whether uri names content in Steward's results store,
// which criteria can read.
func (ac *acceptance) inStore(uri string) bool {
	return ac.results != nil && strings.HasPrefix(uri, "kv://"+action.ResultBucket+"/")
}

// holds refuses a uri into the results store unless it names content
// task taskID holds already: one of its artifacts, or the stored result of
// one of its actions. The store is shared by every task and tenant, a
// key is a task id and a hash, and both are shown to whoever may see a task (GetTask,
// receipts): a reference to any other blob would copy content the caller
// may not read into a task whose content it may (GetArtifactContent). The
// refusal is the same whether or not the store holds the blob, and is
// made before reading it, so it tells nothing about other tasks' content.
func (ac *acceptance) holds(ctx context.Context, taskID, uri string) error {
	t, _, err := ac.tasks.Load(ctx, taskID)
	if err != nil {
		return err
	}
	for _, a := range t.Artifacts {
		if a.Uri == uri {
			return nil
		}
	}
	for _, a := range t.Actions {
		if a.GetOutcome().GetResultRef() == uri {
			return nil
		}
	}
	return errs.Field("uri", "%s is not content of task %s: a uri into Steward's store names one of the task's artifacts or one of its actions' stored results; submit other content inline", errs.Quote(uri), taskID)
}

// commandEvent returns the event a command recorded on taskID under id.
func commandEvent(ctx context.Context, log *eventlog.Log, taskID, id string) (*stewardv1.Event, error) {
	recs, err := log.Read(ctx, taskID)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Event.EventId == id {
			return r.Event, nil
		}
	}
	return nil, errs.New(errs.Internal, "task %s: event %s is in its history but not on its subject", taskID, id)
}

// checkMediaType accepts "type/subtype" with optional parameters.
func checkMediaType(s string) error {
	mt, _, err := mime.ParseMediaType(s)
	if err != nil {
		return errs.Field("media_type", "%s is not a media type: %v", errs.Quote(s), err)
	}
	typ, sub, ok := strings.Cut(mt, "/")
	if !ok || typ == "" || sub == "" || strings.Contains(sub, "/") {
		return errs.Field("media_type", "%s is not a media type such as text/markdown or application/json", errs.Quote(s))
	}
	return nil
}

func sizeMessage(n, limit int64) string {
	return "is " + byteCount(n) + "; the limit is " + byteCount(limit)
}

// byteCount writes n bytes the way a person reads it: "512 KiB".
func byteCount(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.unit
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func (s *taskService) SubmitArtifact(ctx context.Context, req *connect.Request[stewardv1.SubmitArtifactRequest]) (*connect.Response[stewardv1.SubmitArtifactResponse], error) {
	a, t, err := s.plane.acceptance.SubmitArtifact(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.SubmitArtifactResponse{Artifact: a, Task: t}), nil
}
