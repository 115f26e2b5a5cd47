package governance

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// The commands of the plane's groups, as its tests call them: the RPC
// edge (service.go) calls each group directly.

func (p *Plane) CredentialKey() (*stewardv1.GetCredentialKeyResponse, error) {
	return p.credentials.CredentialKey()
}

func (p *Plane) RenewCredential(ctx context.Context, who rpc.Identity, req *stewardv1.RenewCredentialRequest) (*stewardv1.CredentialState, error) {
	return p.credentials.RenewCredential(ctx, who, req)
}

func (p *Plane) RevokeCredential(ctx context.Context, who rpc.Identity, req *stewardv1.RevokeCredentialRequest) (*stewardv1.CredentialState, error) {
	return p.credentials.RevokeCredential(ctx, who, req)
}
