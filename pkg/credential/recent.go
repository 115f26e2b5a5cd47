package credential

import (
	"crypto/ed25519"
	"crypto/sha256"
	"sync"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// recentSignatures bounds what Recent remembers. A permit is verified
// moments after it is signed, so a thousand covers every permit in flight;
// one forgotten is verified in full, which costs time, not safety.
const recentSignatures = 1024

// Recent remembers the permits a Signer signed lately, so that a verifier
// in the same process (steward dev, which runs every plane) can take such
// a permit without running Ed25519 again: a signature this key made over
// exactly these bytes verifies by construction. That check is the larger half of what signed permits cost
// per action (about 100 µs of CPU on a shared 2-core machine; "What it
// costs" in docs/nats.md).
//
// Recent holds signatures and hashes, never the key. Everything else
// VerifyPermit checks — that the key is trusted, that the bytes are the
// recorded permit, for this action and hash — is checked as before. A nil
// *Recent remembers nothing. It is safe for concurrent use.
type Recent struct {
	pub ed25519.PublicKey

	mu    sync.Mutex
	sums  map[[ed25519.SignatureSize]byte][sha256.Size]byte // signature → SHA-256 of what it signs
	order [][ed25519.SignatureSize]byte                     // a ring, to forget the oldest
	next  int
}

func newRecent(pub ed25519.PublicKey) *Recent {
	return &Recent{pub: pub, sums: make(map[[ed25519.SignatureSize]byte][sha256.Size]byte)}
}

// Recent returns the memory of the permits s signed lately.
func (s *Signer) Recent() *Recent { return s.recent }

func (r *Recent) add(data, sig []byte) {
	if r == nil || len(sig) != ed25519.SignatureSize {
		return
	}
	key, sum := [ed25519.SignatureSize]byte(sig), sha256.Sum256(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) < recentSignatures {
		r.order = append(r.order, key)
	} else {
		delete(r.sums, r.order[r.next])
		r.order[r.next] = key
		r.next = (r.next + 1) % recentSignatures
	}
	r.sums[key] = sum
}

// signed reports whether r's signer lately made sig over data with pub.
func (r *Recent) signed(pub, data, sig []byte) bool {
	if r == nil || len(sig) != ed25519.SignatureSize || !r.pub.Equal(ed25519.PublicKey(pub)) {
		return false
	}
	sum := sha256.Sum256(data)
	r.mu.Lock()
	got, ok := r.sums[[ed25519.SignatureSize]byte(sig)]
	r.mu.Unlock()
	return ok && got == sum
}

// VerifyPermit is the package's VerifyPermit, which skips the Ed25519
// check of a permit r's signer made lately.
func (r *Recent) VerifyPermit(recorded *stewardv1.ActionPermit, sp *stewardv1.SignedPermit, actionID, actionHash string, trusted ...ed25519.PublicKey) (*stewardv1.ActionPermit, error) {
	return verifyPermit(r, recorded, sp, actionID, actionHash, trusted)
}
