package control

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/toolreg"
)

// conceal replaces the values of params that entry's schema marks secret
// by their commitments, and seals the values for the execution plane
// (docs/secrets.md). It returns params unchanged, and no sealed values,
// for a tool that marks nothing secret. A value whose commitment under a
// key of the ring is among held keeps that commitment and its sealed value:
// a retry then makes the same request as the action it redoes, even when
// the secret key was rotated in between.
func (p *Plane) conceal(taskID string, entry *toolreg.Entry, params []byte, held []*stewardv1.SealedSecret) ([]byte, []*stewardv1.SealedSecret, error) {
	if !entry.Schema.HasSecrets() {
		return params, nil, nil
	}
	if p.secrets == nil {
		c := entry.Tool.Contract
		return nil, nil, errs.New(errs.FailedPrecondition, "tool %s version %s marks parameters secret, and this control plane has no secret key (--secret-key) to seal them with", c.Name, c.Version)
	}
	byCommitment := map[string]*stewardv1.SealedSecret{}
	concealed, err := entry.Schema.Conceal(params, func(value []byte) string {
		if s := heldFor(p.secrets, taskID, value, held); s != nil {
			byCommitment[s.Commitment] = s
			return s.Commitment
		}
		c := p.secrets.Commit(taskID, value)
		if byCommitment[c] == nil {
			byCommitment[c] = &stewardv1.SealedSecret{Commitment: c, Sealed: p.secrets.Seal(taskID, c, value)}
		}
		return c
	})
	if err != nil {
		return nil, nil, errs.Field("params", "%v", err)
	}
	sealed := make([]*stewardv1.SealedSecret, 0, len(byCommitment))
	for _, s := range byCommitment {
		sealed = append(sealed, s)
	}
	sort.Slice(sealed, func(i, j int) bool { return sealed[i].Commitment < sealed[j].Commitment })
	return concealed, sealed, nil
}

// preparedHeld returns d, the draft of a repeated proposal, prepared again
// keeping the commitments existing (the action its first try recorded)
// holds, when those are under an earlier key of the ring: a repeat after a
// secret key rotation then makes the request the first try made, and gets
// its action. Any other difference stays for sameProposal to refuse.
func preparedHeld(ctx context.Context, p *Plane, t *stewardv1.Task, pr proposal, existing *stewardv1.Action, d *draft) *draft {
	same := d.action.Tool == existing.Tool && d.action.ToolVersion == existing.ToolVersion
	if !same || existing.RequestHash == d.action.RequestHash || len(existing.SealedSecrets) == 0 {
		return d
	}
	pr.held = existing.SealedSecrets
	again, err := p.prepare(ctx, t, pr)
	if err != nil {
		return d
	}
	return again
}

// heldFor returns the sealed value among held that commits to value under
// a key of the ring, or nil.
func heldFor(ring *secret.Sealer, taskID string, value []byte, held []*stewardv1.SealedSecret) *stewardv1.SealedSecret {
	if len(held) == 0 {
		return nil
	}
	for _, c := range ring.Commitments(taskID, value) {
		for _, s := range held {
			if s.Commitment == c {
				return s
			}
		}
	}
	return nil
}

// carrySealed returns own with each of carried whose commitment own lacks,
// sorted by commitment. A compensation quotes the parameters of the action
// it undoes, commitments and all; carrying that action's sealed values lets
// the execution plane open them for the compensating tool, which then
// receives the values the action was called with. Nothing is opened or
// sealed anew: a sealed value is bound to its task and commitment, not to
// one action, and the compensation's request (which its approval and
// permit bind) holds the same commitments.
func carrySealed(own, carried []*stewardv1.SealedSecret) []*stewardv1.SealedSecret {
	out := slices.Clone(own)
	for _, s := range carried {
		if !slices.ContainsFunc(out, func(o *stewardv1.SealedSecret) bool { return o.Commitment == s.Commitment }) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *stewardv1.SealedSecret) int { return strings.Compare(a.Commitment, b.Commitment) })
	return out
}

// secretValues returns the ways params quote the values entry's schema
// marks secret: what an error message about params must not repeat.
func secretValues(entry *toolreg.Entry, params []byte) []string {
	if !entry.Schema.HasSecrets() {
		return nil
	}
	var forms []string
	_, _ = entry.Schema.Conceal(params, func(value []byte) string {
		forms = append(forms, secret.Forms(value)...)
		return ""
	})
	return forms
}

// reveal returns the parameters of an action's canonical request with its
// own sealed values opened again, for a retry that proposes the same
// request anew (prepare then conceals them again into the same
// commitments). Commitments it does not hold stay as they are.
func (p *Plane) reveal(taskID string, params []byte, sealed []*stewardv1.SealedSecret) ([]byte, error) {
	if len(sealed) == 0 || !bytes.Contains(params, []byte(action.SecretField)) {
		return params, nil
	}
	if p.secrets == nil {
		return nil, errs.New(errs.FailedPrecondition, "the action holds secret parameters, and this control plane has no secret key (--secret-key) to open them with")
	}
	return action.RevealRequest(params, func(c string) ([]byte, bool, error) {
		for _, s := range sealed {
			if s.Commitment == c {
				v, err := p.secrets.Open(taskID, c, s.Sealed)
				if err != nil {
					return nil, false, errs.Wrap(errs.Corrupt, err, "secret %s", c)
				}
				return v, true, nil
			}
		}
		return nil, false, nil
	})
}
