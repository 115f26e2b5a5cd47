package credential

import "crypto/ed25519"

const RecentSignatures = recentSignatures

// SignedPermit reports whether r remembers sp as signed by its signer.
func (r *Recent) SignedPermit(data, sig []byte, pub ed25519.PublicKey) bool {
	return r.signed(pub, withContext(permitContext, data), sig)
}

// Len is how many signatures r remembers.
func (r *Recent) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sums)
}
