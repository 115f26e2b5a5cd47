package credential

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/keyfile"
)

// Signer signs credentials with one Ed25519 key.
type Signer struct {
	key    ed25519.PrivateKey
	keyID  string
	recent *Recent // the permits it signed lately
}

// NewSigner returns a signer for key.
func NewSigner(key ed25519.PrivateKey) *Signer {
	pub := key.Public().(ed25519.PublicKey)
	return &Signer{key: key, keyID: KeyID(pub), recent: newRecent(pub)}
}

// KeyID names a public key: the first 16 hex digits of its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// KeyID returns the id of the signer's public key.
func (s *Signer) KeyID() string { return s.keyID }

// PublicKey returns the key that verifies the signer's credentials.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign stamps c with the signer's key id and signs it.
func (s *Signer) Sign(c *stewardv1.TaskCredential) (*stewardv1.SignedCredential, error) {
	c = proto.CloneOf(c)
	c.KeyId = s.keyID
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("sign credential: %w", err)
	}
	return &stewardv1.SignedCredential{
		Credential: data,
		Signature:  ed25519.Sign(s.key, data),
		PublicKey:  s.PublicKey(),
	}, nil
}

// LoadOrCreateKey reads the Ed25519 private key at path (PEM, PKCS #8), or,
// if there is no file, generates one and writes it there (mode 0600), so a
// development server keeps its key across restarts. created says which.
func LoadOrCreateKey(path string) (key ed25519.PrivateKey, created bool, err error) {
	key, err = LoadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	_, key, err = ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, false, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, false, err
	}
	// Of two processes creating the key at once, the first one written
	// wins and the other reads it.
	created, err = keyfile.Create(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	switch {
	case err != nil:
		return nil, false, err
	case created:
		return key, true, nil
	}
	key, err = LoadKey(path)
	return key, false, err
}

// LoadKey reads an Ed25519 private key (PEM, PKCS #8), as
// `openssl genpkey -algorithm ed25519` writes it.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: not a PEM \"PRIVATE KEY\" block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: a %T, not an Ed25519 key", path, k)
	}
	return key, nil
}

// LoadPublicKey reads an Ed25519 public key: PEM ("PUBLIC KEY", PKIX), or
// the 64 hex digits of the raw key.
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePublicKey(data)
}

// ParsePublicKey parses what LoadPublicKey reads.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	if block, _ := pem.Decode(data); block != nil {
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if pub, ok := k.(ed25519.PublicKey); ok {
			return pub, nil
		}
		return nil, fmt.Errorf("a %T, not an Ed25519 public key", k)
	}
	raw, err := hex.DecodeString(string(trimSpace(data)))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, errors.New("not a PEM public key nor 64 hex digits")
	}
	return ed25519.PublicKey(raw), nil
}

// MarshalPublicKey encodes pub as PEM (PKIX).
func MarshalPublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Verify checks s's signature and returns its credential. With trusted
// keys, s must be signed by one of them; without, s is checked against the
// key it carries, which proves integrity but not who signed it.
func Verify(s *stewardv1.SignedCredential, trusted ...ed25519.PublicKey) (*stewardv1.TaskCredential, error) {
	if s == nil || len(s.PublicKey) != ed25519.PublicKeySize {
		return nil, errs.New(errs.Corrupt, "credential carries no Ed25519 public key")
	}
	pub := ed25519.PublicKey(s.PublicKey)
	if len(trusted) > 0 && !trustedKey(pub, trusted) {
		return nil, errs.New(errs.Corrupt, "credential is signed by key %s, which is not trusted", KeyID(pub))
	}
	if !ed25519.Verify(pub, s.Credential, s.Signature) {
		return nil, errs.New(errs.Corrupt, "credential signature does not verify with key %s", KeyID(pub))
	}
	c := &stewardv1.TaskCredential{}
	if err := proto.Unmarshal(s.Credential, c); err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "decode credential")
	}
	if c.KeyId != KeyID(pub) {
		return nil, errs.New(errs.Corrupt, "credential %s names key %s but is signed by %s", c.CredentialId, c.KeyId, KeyID(pub))
	}
	return c, nil
}

func trustedKey(pub ed25519.PublicKey, trusted []ed25519.PublicKey) bool {
	for _, t := range trusted {
		if pub.Equal(t) {
			return true
		}
	}
	return false
}

// VerifyChain checks a delegated credential and its ancestors, given root
// first: every signature verifies — against trusted keys, if any, else
// every link with the root's key — every link names the one before it, and
// every link keeps or narrows the one before. It returns the leaf's
// credential.
func VerifyChain(leaf *stewardv1.SignedCredential, chain []*stewardv1.SignedCredential, trusted ...ed25519.PublicKey) (*stewardv1.TaskCredential, error) {
	var parent *stewardv1.TaskCredential
	for i, s := range append(append([]*stewardv1.SignedCredential(nil), chain...), leaf) {
		c, err := Verify(s, trusted...)
		if err != nil {
			return nil, fmt.Errorf("link %d: %w", i, err)
		}
		// Without trusted keys, a chain is at least signed by one hand:
		// a link signed by another key than the root's would let anyone
		// with a key of their own extend a genuine chain.
		if parent != nil && len(trusted) == 0 && c.KeyId != parent.KeyId {
			return nil, errs.New(errs.Corrupt, "link %d: credential %s is signed by key %s, its parent by %s", i, c.CredentialId, c.KeyId, parent.KeyId)
		}
		switch {
		case parent == nil && c.ParentCredentialId != "":
			return nil, errs.New(errs.Corrupt, "link %d: credential %s names parent %s, which the chain does not hold", i, c.CredentialId, c.ParentCredentialId)
		case parent != nil && c.ParentCredentialId != parent.CredentialId:
			return nil, errs.New(errs.Corrupt, "link %d: credential %s names parent %s, not %s", i, c.CredentialId, errs.Quote(c.ParentCredentialId), parent.CredentialId)
		case parent != nil && c.ParentTaskId != parent.TaskId:
			return nil, errs.New(errs.Corrupt, "link %d: credential %s names parent task %s, not %s", i, c.CredentialId, errs.Quote(c.ParentTaskId), parent.TaskId)
		}
		if parent != nil {
			if err := narrowsCredential(parent, c); err != nil {
				return nil, fmt.Errorf("link %d: credential %s widens its parent: %w", i, c.CredentialId, err)
			}
		}
		parent = c
	}
	return parent, nil
}
