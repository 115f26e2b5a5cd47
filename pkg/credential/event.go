package credential

import (
	"crypto/ed25519"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// SignedPayload is an event payload governance signs over itself: a
// policy snapshot (PolicyEvaluated), a plan version's (PlanEvaluated) or
// an approval request (ApprovalRequested). Each carries its signature in
// its field named signed.
type SignedPayload interface {
	*stewardv1.PolicyEvaluated | *stewardv1.PlanEvaluated | *stewardv1.ApprovalRequested
	proto.Message
	GetSigned() *stewardv1.SignedEvent
}

// payloadContext is what a payload's signature covers before its bytes:
// its type's full name, so a snapshot's signature never passes for an
// approval request's, nor any of them for a permit's or a decision's.
func payloadContext(m proto.Message) string {
	return string(m.ProtoReflect().Descriptor().FullName()) + "\x00"
}

// unsigned is m without its signature: what the signature covers.
func unsigned[M SignedPayload](m M) M {
	m = proto.CloneOf(m)
	r := m.ProtoReflect()
	r.Clear(r.Descriptor().Fields().ByName("signed"))
	return m
}

// SignEvent signs m, without its signed field, over its deterministic
// encoding, as SignDecision signs a decision.
func SignEvent[M SignedPayload](s *Signer, m M) (*stewardv1.SignedEvent, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(unsigned(m))
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", describe(m), err)
	}
	return &stewardv1.SignedEvent{
		Payload:   data,
		Signature: ed25519.Sign(s.key, withContext(payloadContext(m), data)),
		PublicKey: s.PublicKey(),
	}, nil
}

// SignInto signs m as SignEvent does and sets its signed field.
func SignInto[M SignedPayload](s *Signer, m M) error {
	sig, err := SignEvent(s, m)
	if err != nil {
		return err
	}
	r := m.ProtoReflect()
	r.Set(r.Descriptor().Fields().ByName("signed"), protoreflect.ValueOfMessage(sig.ProtoReflect()))
	return nil
}

// VerifyEvent checks that m's signature holds (against trusted, when
// given) and that the signed bytes are m's own fields, unchanged. An
// unsigned m fails: whether one recorded before these were signed is
// taken is the caller's rule (docs/compatibility.md).
func VerifyEvent[M SignedPayload](m M, trusted ...ed25519.PublicKey) error {
	what := describe(m)
	sd := m.GetSigned()
	if sd == nil {
		return errs.New(errs.Corrupt, "%s is not signed", what)
	}
	if err := checkSignature(what, sd.PublicKey, withContext(payloadContext(m), sd.Payload), sd.Signature, trusted, nil); err != nil {
		return err
	}
	signed := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(sd.Payload, signed); err != nil {
		return errs.Wrap(errs.Corrupt, err, "decode signed %s", what)
	}
	if !proto.Equal(signed, unsigned(m)) {
		return errs.New(errs.Corrupt, "%s is not the one that was signed (signed: %s)", what, describe(signed))
	}
	return nil
}

// VerifySnapshot checks the signature of a's snapshot as the fold keeps
// it (Action.snapshot_signed), as VerifyEvent checks its PolicyEvaluated.
func VerifySnapshot(a *stewardv1.Action, trusted ...ed25519.PublicKey) error {
	return VerifyEvent(&stewardv1.PolicyEvaluated{ActionId: a.GetActionId(), Snapshot: a.GetSnapshot(), Signed: a.GetSnapshotSigned()}, trusted...)
}

// VerifyApprovalRequest checks the signature of the request that opened
// ap (Approval.request_signed): it must cover ap's terms as they stand,
// what its approvers were shown.
func VerifyApprovalRequest(ap *stewardv1.Approval, trusted ...ed25519.PublicKey) error {
	return VerifyEvent(&stewardv1.ApprovalRequested{Approval: RequestTerms(ap), Signed: ap.GetRequestSigned()}, trusted...)
}

// RequestTerms is ap as it was requested: without what the fold adds as
// it is decided (votes, decision, escalation, amendment, withdrawal) and
// without the request's signature.
func RequestTerms(ap *stewardv1.Approval) *stewardv1.Approval {
	ap = proto.CloneOf(ap)
	ap.Decision, ap.DecidedBy, ap.Comment, ap.DecidedAt, ap.Withdrawn, ap.Votes = 0, "", "", nil, false, nil
	ap.EscalatedTo, ap.EscalatedAt, ap.AmendedParamsJson, ap.AmendedActionId = "", nil, "", ""
	ap.RequestSigned = nil
	return ap
}

// describe names a signed payload in an error.
func describe(m proto.Message) string {
	switch m := m.(type) {
	case *stewardv1.PolicyEvaluated:
		return fmt.Sprintf("policy snapshot %s of action %s (%s)", m.GetSnapshot().GetSnapshotId(), m.GetActionId(), m.GetSnapshot().GetDecision())
	case *stewardv1.PlanEvaluated:
		return fmt.Sprintf("plan evaluation of version %d, hash %s (%s)", m.GetVersion(), m.GetPlanHash(), m.GetSnapshot().GetDecision())
	case *stewardv1.ApprovalRequested:
		ap := m.GetApproval()
		return fmt.Sprintf("approval request %s (%s %s, hash %s)", ap.GetApprovalId(), ap.GetTool(), ap.GetTarget(), ap.GetActionHash()+ap.GetPlanHash())
	}
	return string(m.ProtoReflect().Descriptor().FullName())
}
