package app

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/secret"
)

// rotationFlags name the keys kept beside the current ones while a key is
// rotated (docs/keys.md): what an earlier key sealed must still open, and
// tools must know a call key before it signs and after it stops.
type rotationFlags struct {
	// control, execution: earlier secret keys, still opening what they sealed
	SecretEarlier []string
	// execution: call public keys published in the JWKS beside the signing one
	CallPublished []string
}

func (r *rotationFlags) register(fs *flag.FlagSet) {
	fs.Func("secret-key-earlier", "`FILE` of an earlier --secret-key (64 hex digits), still opening the secret parameters it sealed, and keeping their commitments for a retry: rotate the key without failing actions proposed before; repeat for several (control and execution planes; docs/keys.md)", func(path string) error {
		r.SecretEarlier = append(r.SecretEarlier, path)
		return nil
	})
	fs.Func("call-key-published", "public key `FILE` (PEM or hex) of another call key to publish in the JWKS beside --call-key's: the next key, so tools know it before it signs, or the earlier one, until the tokens it signed expire; repeat for several (execution plane; docs/keys.md)", func(path string) error {
		r.CallPublished = append(r.CallPublished, path)
		return nil
	})
}

// earlierSecretKeys reads the keys of --secret-key-earlier.
func (r rotationFlags) earlierSecretKeys() ([][]byte, error) {
	var keys [][]byte
	for _, path := range r.SecretEarlier {
		key, err := secret.LoadKey(path)
		if err != nil {
			return nil, fmt.Errorf("--secret-key-earlier: %w", err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// callKeySet returns the public keys the call JWKS publishes: signing's
// first, then those of --call-key-published.
func (r rotationFlags) callKeySet(signing ed25519.PublicKey) ([]ed25519.PublicKey, error) {
	keys := []ed25519.PublicKey{signing}
	for _, path := range r.CallPublished {
		pub, err := credential.LoadPublicKey(path)
		if err != nil {
			return nil, fmt.Errorf("--call-key-published: %w", err)
		}
		// One kid twice in a JWKS is a set some JOSE libraries refuse.
		if slices.ContainsFunc(keys, func(k ed25519.PublicKey) bool { return k.Equal(pub) }) {
			return nil, fmt.Errorf("--call-key-published: %s is a key published already (the signing key, or another --call-key-published)", path)
		}
		keys = append(keys, pub)
	}
	return keys, nil
}

// check refuses keys kept beside a current key that serve does not have:
// they would be ignored, and a rotation would seem to work until it did not.
func (r rotationFlags) check(m *Server) error {
	switch {
	case m.Mode != "serve":
		return nil // dev has a default for each current key
	case len(r.SecretEarlier) > 0 && m.SecretKey == "":
		return errors.New("--secret-key-earlier needs --secret-key: the current key seals, the earlier ones only open")
	case len(r.CallPublished) > 0 && m.CallKey == "":
		return errors.New("--call-key-published needs --call-key: the published keys stand beside the one that signs")
	}
	return nil
}
