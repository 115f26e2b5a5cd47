package state

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// The state plane serves the dead letters: it reads the log for operators
// and auditors already, and a replay writes no event, only a request on
// the dead-letter stream that the consumer which set the record aside
// takes up in its own process (eventlog.RequestReplay).
type deadLetterService struct {
	stewardv1connect.UnimplementedDeadLetterServiceHandler
	plane *Plane
}

// Paging limits for ListDeadLetters: a page holds no event's bytes, and
// each record's reasons are at most eventlog.MaxReason bytes, so a full
// page stays near 1 MiB.
const (
	DefaultDeadLetterPage = 100
	MaxDeadLetterPage     = 500
)

// mayOperate refuses a caller who is not an operator of the default
// tenant. The edge has checked the operator role (pkg/access); the
// dead-letter stream is the deployment's and holds every tenant's events,
// so a tenant's operator, who runs that tenant's tasks, is refused it.
func mayOperate(ctx context.Context) error {
	who := rpc.Caller(ctx)
	if who.Verified && who.Tenant != "" {
		return errs.New(errs.PermissionDenied, "%s may not see or replay dead letters: they are the deployment's, every tenant's, and only operators of the default tenant handle them", who.Principal)
	}
	return nil
}

func (s *deadLetterService) ListDeadLetters(ctx context.Context, req *connect.Request[stewardv1.ListDeadLettersRequest]) (*connect.Response[stewardv1.ListDeadLettersResponse], error) {
	if err := mayOperate(ctx); err != nil {
		return nil, err
	}
	size, err := rpc.PageSize(req.Msg.PageSize, DefaultDeadLetterPage, MaxDeadLetterPage)
	if err != nil {
		return nil, err
	}
	after, err := decodeDeadLetterToken(req.Msg.PageToken)
	if err != nil {
		return nil, err
	}
	list, more, err := s.plane.log.ListDeadLetters(ctx, after, size)
	if err != nil {
		return nil, err
	}
	out := &stewardv1.ListDeadLettersResponse{}
	bytes, weigh := 0, rpc.PageWeigher(req.Header())
	for i, d := range list {
		dl := &stewardv1.DeadLetter{
			Sequence: d.Sequence, Consumer: d.Consumer, Subject: d.Subject, TaskId: d.TaskID, EventType: d.Type,
			Reason: d.Reason, SetAsideAt: timestamppb.New(d.At), State: stewardv1.DeadLetterState(d.State), ReplayError: d.ReplayError,
		}
		// As ListTasks, the page ends before the record that would pass
		// rpc.MaxPageBytes.
		n := weigh(dl)
		if i > 0 && bytes+n > rpc.MaxPageBytes {
			list, more = list[:i], true
			break
		}
		bytes += n
		out.DeadLetters = append(out.DeadLetters, dl)
	}
	if more && len(list) > 0 {
		out.NextPageToken = encodeDeadLetterToken(list[len(list)-1].DeadLetterKey)
	}
	return connect.NewResponse(out), nil
}

func (s *deadLetterService) ReplayDeadLetter(ctx context.Context, req *connect.Request[stewardv1.ReplayDeadLetterRequest]) (*connect.Response[stewardv1.ReplayDeadLetterResponse], error) {
	if err := mayOperate(ctx); err != nil {
		return nil, err
	}
	nonce, err := s.plane.log.RequestReplay(ctx, req.Msg.Sequence, req.Msg.Consumer)
	if err != nil {
		return nil, err
	}
	s.plane.logger.Info("dead letter replay asked for", "seq", req.Msg.Sequence, "consumer", req.Msg.Consumer,
		"by", rpc.Caller(ctx).Principal, "replay_id", nonce)
	return connect.NewResponse(&stewardv1.ReplayDeadLetterResponse{ReplayId: nonce}), nil
}

// A dead-letter page token is the key of the last record served:
// "dl1:<sequence>.<consumer>", base64url, opaque to clients.
const deadLetterTokenPrefix = "dl1:"

func encodeDeadLetterToken(k eventlog.DeadLetterKey) string {
	return base64.RawURLEncoding.EncodeToString([]byte(deadLetterTokenPrefix + strconv.FormatUint(k.Sequence, 10) + "." + k.Consumer))
}

func decodeDeadLetterToken(tok string) (eventlog.DeadLetterKey, error) {
	if tok == "" {
		return eventlog.DeadLetterKey{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(raw), deadLetterTokenPrefix); ok {
			seq, consumer, _ := strings.Cut(rest, ".")
			if n, err := strconv.ParseUint(seq, 10, 64); err == nil && n > 0 {
				return eventlog.DeadLetterKey{Sequence: n, Consumer: consumer}, nil
			}
		}
	}
	return eventlog.DeadLetterKey{}, errs.Field("page_token", "is not a token this server issued")
}
