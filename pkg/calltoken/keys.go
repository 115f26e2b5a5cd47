package calltoken

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxJWKS bounds a fetched key set: a few keys take a few hundred bytes.
const maxJWKS = 64 << 10

// jwk is one Ed25519 public key as a JWK (RFC 8037).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

// KeyID is the kid of pub: its JWK thumbprint (RFC 7638), base64url.
func KeyID(pub ed25519.PublicKey) string {
	// The members in lexical order, without spaces, as RFC 7638 says.
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + b64(pub) + `"}`))
	return b64(sum[:])
}

// KeySet is the public keys tokens may be signed with, by kid.
type KeySet struct {
	keys map[string]ed25519.PublicKey
}

// NewKeySet returns a set of keys.
func NewKeySet(keys ...ed25519.PublicKey) KeySet {
	s := KeySet{keys: map[string]ed25519.PublicKey{}}
	for _, k := range keys {
		s.keys[KeyID(k)] = k
	}
	return s
}

// Len is how many keys s holds.
func (s KeySet) Len() int { return len(s.keys) }

// key finds the key named kid: "" only in a set of one.
func (s KeySet) key(kid string) (ed25519.PublicKey, error) {
	if kid == "" && len(s.keys) == 1 {
		for _, k := range s.keys {
			return k, nil
		}
	}
	if k, ok := s.keys[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("no call key %q among the %d trusted", kid, len(s.keys))
}

// MarshalJWKS encodes keys as a JWKS, as Steward publishes it.
func MarshalJWKS(keys ...ed25519.PublicKey) ([]byte, error) {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	for _, k := range keys {
		set.Keys = append(set.Keys, jwk{Kty: "OKP", Crv: "Ed25519", X: b64(k), Kid: KeyID(k), Alg: "EdDSA", Use: "sig"})
	}
	return json.MarshalIndent(set, "", "  ")
}

// ParseJWKS reads the Ed25519 keys of a JWKS; a key of another type is
// skipped, and a set with none is an error.
func ParseJWKS(data []byte) (KeySet, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return KeySet{}, fmt.Errorf("call keys: %w", err)
	}
	var keys []ed25519.PublicKey
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return KeySet{}, fmt.Errorf("call keys: key %q: x is not an Ed25519 public key", k.Kid)
		}
		keys = append(keys, ed25519.PublicKey(x))
	}
	if len(keys) == 0 {
		return KeySet{}, errors.New("call keys: no Ed25519 signing key in the set")
	}
	return NewKeySet(keys...), nil
}

// FetchKeys gets the JWKS at url (Steward's address and WellKnownPath)
// with client (http.DefaultClient when nil). Fetch it over TLS, or from a
// file written by whoever runs Steward: the keys are what every token is
// trusted by.
func FetchKeys(ctx context.Context, client *http.Client, url string) (KeySet, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return KeySet{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return KeySet{}, fmt.Errorf("call keys: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return KeySet{}, fmt.Errorf("call keys: %s answered %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS))
	if err != nil {
		return KeySet{}, fmt.Errorf("call keys: %w", err)
	}
	return ParseJWKS(data)
}
