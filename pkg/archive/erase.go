package archive

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/auditbundle"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// EraseContent takes the stored requests, results and policy inputs out
// of b, keeping for each only its hash, which the events commit to, and
// returns how many it erased. The events themselves stay: a chain of
// hashes cannot lose a byte and still verify, and the content they hold
// inline (under action.MaxInlineRequest) or as secret commitments stays
// with them (docs/archives.md, "Erasure").
func EraseContent(b *stewardv1.AuditBundle, reason string) int {
	n := 0
	for _, s := range []struct {
		name  string
		blobs *[]*stewardv1.BundleBlob
	}{{auditbundle.SectionRequests, &b.Requests}, {auditbundle.SectionResults, &b.Results}, {auditbundle.SectionInputs, &b.Inputs}} {
		for _, blob := range *s.blobs {
			b.Erased = append(b.Erased, &stewardv1.ErasedBlob{Section: s.name, Hash: blob.Hash, Reason: reason})
			n++
		}
		*s.blobs = nil
	}
	return n
}

// EraseTenant erases the content of every archived tree of tenant
// (EraseContent) and rewrites each bundle, read back and compared. It
// returns the trees rewritten and the pieces erased; running it again
// erases nothing more.
func (a *Archive) EraseTenant(ctx context.Context, tenant, reason string) (trees, pieces int, err error) {
	roots, err := a.Trees(ctx, tenant)
	if err != nil {
		return 0, 0, err
	}
	for _, root := range roots {
		b, err := a.tree(ctx, root)
		if err != nil {
			return trees, pieces, err
		}
		n := EraseContent(b, reason)
		if n == 0 {
			continue
		}
		if err := a.Put(ctx, root, tenant, b); err != nil {
			return trees, pieces, fmt.Errorf("erase %s: %w", root, err)
		}
		trees++
		pieces += n
	}
	return trees, pieces, nil
}
