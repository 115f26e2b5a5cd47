package governance

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/toolreg"
)

// credentials is governance's job of task credentials: issued when a task
// is created (credential.go), checked before policy and in the permit's
// write, renewed (renew.go) and revoked (revoke.go), their signatures
// verified against the keys trusted. It reaches the rest of the plane
// only through denying.
type credentials struct {
	denying
	log       *eventlog.Log
	tasks     *taskstore.Store
	logger    *slog.Logger
	tools     *toolreg.Registry
	approvals *Approvals
	now       func() time.Time
	signer    *credential.Signer
	ttl       time.Duration
	// trusted are the keys a task's credential may be signed with: the
	// signer's and those kept after a rotation (Config.TrustedKeys).
	trusted  []ed25519.PublicKey
	verified verifiedSet
}

// denying is what credentials ask of the plane: an action denied, saying
// why, and the meta of an event it records.
type denying interface {
	deny(ctx context.Context, taskID string, a *stewardv1.Action, reasons []string, cause *stewardv1.Event) error
	meta(taskID, id string, cause *stewardv1.Event) event.Meta
}
