package credential

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// What a permit's and an approval decision's signatures cover: a context
// naming the kind of statement, then its bytes. Credentials are signed
// over their bytes alone, and a principal chooses some of a credential's
// fields: without the context, a credential whose bytes happened to decode
// as a permit would carry a valid permit signature.
const (
	permitContext   = "steward.v1.ActionPermit\x00"
	decisionContext = "steward.v1.ApprovalDecided\x00"
)

func withContext(context string, data []byte) []byte {
	return append([]byte(context), data...)
}

// SignPermit signs p over its deterministic encoding.
func (s *Signer) SignPermit(p *stewardv1.ActionPermit) (*stewardv1.SignedPermit, error) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("sign permit: %w", err)
	}
	signed := withContext(permitContext, data)
	sig := ed25519.Sign(s.key, signed)
	s.recent.add(signed, sig)
	return &stewardv1.SignedPermit{Permit: data, Signature: sig, PublicKey: s.PublicKey()}, nil
}

// SignDecision signs d, without its signed field, over its deterministic
// encoding: who decided, on which approval, action and hash, and what.
func (s *Signer) SignDecision(d *stewardv1.ApprovalDecided) (*stewardv1.SignedApprovalDecision, error) {
	d = proto.CloneOf(d)
	d.Signed = nil
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("sign approval decision: %w", err)
	}
	return &stewardv1.SignedApprovalDecision{
		Decision:  data,
		Signature: ed25519.Sign(s.key, withContext(decisionContext, data)),
		PublicKey: s.PublicKey(),
	}, nil
}

// VerifyPermit checks that the permit recorded with an action holds: sp
// is signed (by one of trusted, when given; else by the key it carries,
// which proves integrity only), its bytes are recorded, a permit, and
// that permit names actionID and actionHash. A permit copied onto another
// action fails here, however well it is signed. It returns the signed
// permit.
func VerifyPermit(recorded *stewardv1.ActionPermit, sp *stewardv1.SignedPermit, actionID, actionHash string, trusted ...ed25519.PublicKey) (*stewardv1.ActionPermit, error) {
	return verifyPermit(nil, recorded, sp, actionID, actionHash, trusted)
}

func verifyPermit(recent *Recent, recorded *stewardv1.ActionPermit, sp *stewardv1.SignedPermit, actionID, actionHash string, trusted []ed25519.PublicKey) (*stewardv1.ActionPermit, error) {
	id := recorded.GetPermitId()
	if sp == nil {
		return nil, errs.New(errs.Corrupt, "permit %s is not signed", id)
	}
	if err := checkSignature("permit "+id, sp.PublicKey, withContext(permitContext, sp.Permit), sp.Signature, trusted, recent); err != nil {
		return nil, err
	}
	p := &stewardv1.ActionPermit{}
	if err := proto.Unmarshal(sp.Permit, p); err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "decode signed permit %s", id)
	}
	switch {
	case p.ActionId != actionID || p.ActionHash != actionHash:
		return nil, errs.New(errs.Corrupt, "permit %s was signed for action %s with hash %s, not action %s with hash %s", id, p.ActionId, p.ActionHash, actionID, actionHash)
	case !proto.Equal(p, recorded):
		return nil, errs.New(errs.Corrupt, "permit %s is not the permit that was signed (%s)", id, p.PermitId)
	}
	return p, nil
}

// VerifyDecision checks that d's signature holds (against trusted, when
// given) and that the signed bytes are d's own fields, unchanged.
func VerifyDecision(d *stewardv1.ApprovalDecided, trusted ...ed25519.PublicKey) error {
	what := fmt.Sprintf("approval decision of %s on %s", d.GetDecidedBy(), d.GetApprovalId())
	sd := d.GetSigned()
	if sd == nil {
		return errs.New(errs.Corrupt, "%s is not signed", what)
	}
	if err := checkSignature(what, sd.PublicKey, withContext(decisionContext, sd.Decision), sd.Signature, trusted, nil); err != nil {
		return err
	}
	signed := &stewardv1.ApprovalDecided{}
	if err := proto.Unmarshal(sd.Decision, signed); err != nil {
		return errs.Wrap(errs.Corrupt, err, "decode signed %s", what)
	}
	bare := proto.CloneOf(d)
	bare.Signed = nil
	if !proto.Equal(signed, bare) {
		return errs.New(errs.Corrupt, "%s is not the decision that was signed (%s by %s on hash %s)", what, signed.Decision, signed.DecidedBy, signed.ActionHash)
	}
	return nil
}

// checkSignature checks sig over data with key, which must be one of
// trusted when any are given. A signature recent's signer made is not
// verified again.
// VerifyVote checks that vote v on ap holds as VerifyDecision checks a
// decision: its signature holds (against trusted, when given), and the
// signed decision is v's, on ap's approval, action and hash (or plan
// hash, for the approval of a plan).
func VerifyVote(ap *stewardv1.Approval, v *stewardv1.ApprovalVote, trusted ...ed25519.PublicKey) error {
	what := fmt.Sprintf("vote of %s on %s", v.GetPrincipal(), ap.GetApprovalId())
	sd := v.GetSigned()
	if sd == nil {
		return errs.New(errs.Corrupt, "%s is not signed", what)
	}
	if err := checkSignature(what, sd.PublicKey, withContext(decisionContext, sd.Decision), sd.Signature, trusted, nil); err != nil {
		return err
	}
	d := &stewardv1.ApprovalDecided{}
	if err := proto.Unmarshal(sd.Decision, d); err != nil {
		return errs.Wrap(errs.Corrupt, err, "decode signed %s", what)
	}
	if d.ApprovalId != ap.GetApprovalId() || d.ActionId != ap.GetActionId() || d.ActionHash != ap.GetActionHash() || d.PlanHash != ap.GetPlanHash() ||
		d.DecidedBy != v.GetPrincipal() || d.Decision != v.GetDecision() || d.Comment != v.GetComment() ||
		d.AsBackup != v.GetAsBackup() {
		return errs.New(errs.Corrupt, "%s is not the vote that was signed (%s by %s on approval %s, hash %s)", what, d.Decision, d.DecidedBy, d.ApprovalId, d.ActionHash)
	}
	return nil
}

func checkSignature(what string, key, data, sig []byte, trusted []ed25519.PublicKey, recent *Recent) error {
	if len(key) != ed25519.PublicKeySize {
		return errs.New(errs.Corrupt, "%s carries no Ed25519 public key", what)
	}
	pub := ed25519.PublicKey(key)
	if len(trusted) > 0 && !trustedKey(pub, trusted) {
		return errs.New(errs.Corrupt, "%s is signed by key %s, which is not trusted", what, KeyID(pub))
	}
	if !recent.signed(pub, data, sig) && !ed25519.Verify(pub, data, sig) {
		return errs.New(errs.Corrupt, "%s: signature does not verify with key %s", what, KeyID(pub))
	}
	return nil
}

// SnapshotHash is the hex SHA-256 of s's deterministic encoding: what a
// permit names (ActionPermit.snapshot_hash) so that its signature covers
// the snapshot it was decided under. A nil s hashes as an empty one.
func SnapshotHash(s *stewardv1.PolicySnapshot) string {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err != nil {
		data = nil // a snapshot always encodes; none hashes as empty
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
