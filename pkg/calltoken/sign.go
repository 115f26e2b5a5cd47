package calltoken

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// header is a token's JOSE header.
type header struct {
	Alg  string `json:"alg"`
	Kid  string `json:"kid,omitempty"`
	Typ  string `json:"typ,omitempty"`
	Crit []any  `json:"crit,omitempty"`
}

// tokenType is a token's typ: it is not a bearer JWT for any API.
const tokenType = "steward-call+jwt"

// Signer signs tokens with the execution plane's call key.
type Signer struct {
	key ed25519.PrivateKey
	kid string
}

// NewSigner returns a signer for key.
func NewSigner(key ed25519.PrivateKey) *Signer {
	return &Signer{key: key, kid: KeyID(key.Public().(ed25519.PublicKey))}
}

// KeyID returns the kid of the signer's key.
func (s *Signer) KeyID() string { return s.kid }

// PublicKey returns the key that verifies the signer's tokens.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign returns c as a compact JWS. It sets c's Issuer, and its ID when
// empty (16 random bytes): every request gets a token of its own.
func (s *Signer) Sign(c Claims) (string, error) {
	c.Issuer = Issuer
	if c.ID == "" {
		id := make([]byte, 16)
		if _, err := rand.Read(id); err != nil {
			return "", fmt.Errorf("call token id: %w", err)
		}
		c.ID = base64.RawURLEncoding.EncodeToString(id)
	}
	h, err := json.Marshal(header{Alg: "EdDSA", Kid: s.kid, Typ: tokenType})
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signed := b64(h) + "." + b64(p)
	return signed + "." + b64(ed25519.Sign(s.key, []byte(signed))), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
