// Package secret keeps the values of secret tool parameters out of
// everything Steward stores, shows and signs. A parameter schema marks a
// field secret (writeOnly: true, or "x-steward-secret": true; see pkg/action
// Schema.Conceal); the control plane replaces its value, in the canonical
// request, by a keyed commitment
//
//	{"$secret":"hmac-sha256:<64 hex>"}
//
// and seals the value itself (XChaCha20-Poly1305) into the proposal; the
// execution plane opens it just before the call and checks it against the
// commitment again. One key file holds a 32-byte master key; the keys for
// the commitment and for the sealing derive from it by HKDF-SHA256, so an
// operator keeps one file. See docs/secrets.md.
//
// A Sealer is safe for concurrent use.
package secret

import (
	"cmp"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/steward-run/steward/pkg/keyfile"
)

// Prefix starts every commitment: it names the scheme, so that another can
// follow without ambiguity.
const Prefix = "hmac-sha256:"

// KeySize is the size of the master key in bytes.
const KeySize = 32

// Sealer commits to secret values and seals and opens them, under its
// current key; it also opens values sealed under earlier keys of its ring
// (New's earlier), so that a rotation does not strand actions proposed
// before it.
type Sealer struct {
	keys []ringKey // the current key first
}

// ringKey is one master key's derived keys, and its id.
type ringKey struct {
	id     string
	mac    []byte
	digest []byte
	aead   cipher.AEAD
}

// New returns a Sealer for a master key of KeySize bytes, which commits,
// seals and keys digests, and for the earlier master keys still trusted
// to open what they sealed (docs/keys.md).
func New(master []byte, earlier ...[]byte) (*Sealer, error) {
	s := &Sealer{}
	for i, m := range append([][]byte{master}, earlier...) {
		k, err := derive(m)
		if err != nil {
			if i > 0 {
				return nil, fmt.Errorf("earlier key %d: %w", i, err)
			}
			return nil, err
		}
		if slices.ContainsFunc(s.keys, func(o ringKey) bool { return o.id == k.id }) {
			return nil, fmt.Errorf("the key %s is given twice", k.id)
		}
		s.keys = append(s.keys, k)
	}
	return s, nil
}

func derive(master []byte) (ringKey, error) {
	if len(master) != KeySize {
		return ringKey{}, fmt.Errorf("the secret key is %d bytes, want %d", len(master), KeySize)
	}
	var k ringKey
	var err error
	labels := []struct {
		out  *[]byte
		info string
	}{{&k.mac, "steward.secret.commit.v1"}, {&k.digest, "steward.digest.v1"}}
	for _, l := range labels {
		if *l.out, err = hkdf.Key(sha256.New, master, nil, l.info, 32); err != nil {
			return ringKey{}, err
		}
	}
	enc, err := hkdf.Key(sha256.New, master, nil, "steward.secret.seal.v1", chacha20poly1305.KeySize)
	if err != nil {
		return ringKey{}, err
	}
	if k.aead, err = chacha20poly1305.NewX(enc); err != nil {
		return ringKey{}, err
	}
	id, err := hkdf.Key(sha256.New, master, nil, "steward.secret.id.v1", 8)
	if err != nil {
		return ringKey{}, err
	}
	k.id = hex.EncodeToString(id)
	return k, nil
}

// KeyIDs returns the ids of the ring's keys, the current one first: 16
// hex digits derived from each key (one-way), for logs and for telling
// key files apart without showing them.
func (s *Sealer) KeyIDs() []string {
	ids := make([]string, len(s.keys))
	for i, k := range s.keys {
		ids[i] = k.id
	}
	return ids
}

// Commit returns the commitment to value (canonical JSON) in task taskID:
// HMAC-SHA256 under the commitment key of "steward.secret.v1", the task id
// and the value, joined by NUL bytes. It is deterministic, so that the same
// proposal again has the same request hash; keyed, so that nobody without
// the key can test guesses of a short secret against it; and bound to the
// task, so that one value in two tasks cannot be linked by its commitment.
// It uses the current key.
func (s *Sealer) Commit(taskID string, value []byte) string {
	return s.keys[0].commit(taskID, value)
}

// Commitments returns value's commitment in task taskID under each key of
// the ring, the current one first: a retry of an action proposed before a
// rotation finds the commitment its request holds among them.
func (s *Sealer) Commitments(taskID string, value []byte) []string {
	out := make([]string, len(s.keys))
	for i, k := range s.keys {
		out[i] = k.commit(taskID, value)
	}
	return out
}

func (k ringKey) commit(taskID string, value []byte) string {
	m := hmac.New(sha256.New, k.mac)
	m.Write([]byte("steward.secret.v1\x00" + taskID + "\x00"))
	m.Write(value)
	return Prefix + hex.EncodeToString(m.Sum(nil))
}

// Digest returns the digest shown, in task taskID, in place of hash (a
// plain SHA-256 of a result, an artifact or a request) to a caller who may
// not read the content it covers: HMAC-SHA256 under its own key, derived
// from the master key, of "steward.digest.v1", the task id and hash,
// joined by NUL bytes, with Prefix. A plain SHA-256 of a short result
// ({"approved":true}) is recovered by trying guesses; this one cannot be
// tested without the key. It is stable under one key, so that one caller
// can still see two views name the same content, and bound to the task.
// A nil Sealer (no key) returns "": the digest is then hidden. Empty hash
// gives "".
func (s *Sealer) Digest(taskID, hash string) string {
	if s == nil || hash == "" {
		return ""
	}
	m := hmac.New(sha256.New, s.keys[0].digest)
	m.Write([]byte("steward.digest.v1\x00" + taskID + "\x00" + hash))
	return Prefix + hex.EncodeToString(m.Sum(nil))
}

// Seal encrypts value under the current sealing key, with the task id and
// the commitment as associated data: a sealed value opens only for the
// commitment it was sealed for. It returns nonce || ciphertext.
func (s *Sealer) Seal(taskID, commitment string, value []byte) []byte {
	aead := s.keys[0].aead
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(value)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand does not fail
	}
	return aead.Seal(nonce, nonce, value, ad(taskID, commitment))
}

// ErrMismatch is returned by Open for a sealed value that does not open, or
// opens to a value whose commitment is not the one it is sealed for.
var ErrMismatch = errors.New("the sealed secret does not match its commitment")

// Open decrypts a sealed value and checks that it commits to commitment
// in task taskID: the value sent to a tool is the one the approval bound.
// Each key of the ring is tried, the current one first; the value must
// commit to commitment under the key that opened it. An AEAD opens only
// under the key that sealed, so trying the others costs a failed tag check
// each, and never opens a value under the wrong key.
func (s *Sealer) Open(taskID, commitment string, sealed []byte) ([]byte, error) {
	for _, k := range s.keys {
		n := k.aead.NonceSize()
		if len(sealed) < n+k.aead.Overhead() {
			return nil, ErrMismatch
		}
		value, err := k.aead.Open(nil, sealed[:n], sealed[n:], ad(taskID, commitment))
		if err != nil {
			continue
		}
		if !hmac.Equal([]byte(k.commit(taskID, value)), []byte(commitment)) {
			return nil, ErrMismatch
		}
		return value, nil
	}
	return nil, unknownKey{s.KeyIDs()}
}

// unknownKey is Open's error for a value that opens under no key of the
// ring: the likeliest cause is an operator's — an earlier key left out of
// the ring, or dropped while values it sealed were still in use — and the
// error says so. It is an ErrMismatch to callers.
type unknownKey struct{ ids []string }

func (e unknownKey) Error() string {
	return fmt.Sprintf("the sealed secret opens under none of the keys held here (ids %s): it was sealed under another key — an earlier key missing from the ring (docs/keys.md) — or altered", strings.Join(e.ids, ", "))
}

func (unknownKey) Is(target error) bool { return target == ErrMismatch }

func ad(taskID, commitment string) []byte {
	return []byte("steward.secret.v1\x00" + taskID + "\x00" + commitment)
}

// LoadOrCreateKey reads the master key from path (LoadKey), or, when the
// file is missing, creates it with a new random key, readable by its owner
// only: created reports which. Two processes creating it at once end with
// the same key, the first one written (keyfile.Create). Only a process that
// owns its key file alone, such as steward dev over its data directory,
// should create one: planes in separate places would each make their own.
func LoadOrCreateKey(path string) (key []byte, created bool, err error) {
	key, err = LoadKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, err
	}
	created, err = keyfile.Create(path, []byte(hex.EncodeToString(key)+"\n"))
	switch {
	case err != nil:
		return nil, false, err
	case created:
		return key, true, nil
	}
	key, err = LoadKey(path) // another process made it first: use its key
	return key, false, err
}

// LoadKey reads the master key from path: 64 hex digits (a trailing
// newline is allowed), as 'openssl rand -hex 32' writes them. A missing
// file is an error satisfying errors.Is(err, fs.ErrNotExist).
func LoadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("%s: want %d hex digits (openssl rand -hex %d)", path, 2*KeySize, KeySize)
	}
	return key, nil
}

// Forms returns the ways a secret value (canonical JSON) may be quoted in
// a message: its JSON text and every non-empty string in it — the text of
// a string value, and of each string inside an object or list marked
// secret as a whole, which a message may quote alone. Longer forms come
// first, so that Redact never leaves the rest of one that holds another.
func Forms(value []byte) []string {
	forms := []string{string(value)}
	var v any
	if json.Unmarshal(value, &v) == nil {
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				if x != "" {
					forms = append(forms, x)
				}
			case map[string]any:
				for _, e := range x {
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
	}
	slices.SortFunc(forms, longerFirst)
	return slices.Compact(forms)
}

// Redact replaces each of forms (Forms, of one value or several) in msg by
// "[secret]", the longer forms first. A message cut short with "…" (as a
// tool's reason is clipped) that ends in the beginning of a form has that
// end replaced too: the cut may fall inside a value.
func Redact(msg string, forms []string) string {
	if !slices.IsSortedFunc(forms, longerFirst) {
		forms = slices.SortedFunc(slices.Values(forms), longerFirst)
	}
	for _, f := range forms {
		if f != "" {
			msg = strings.ReplaceAll(msg, f, "[secret]")
		}
	}
	if cut, ok := strings.CutSuffix(msg, "…"); ok {
		longest := 0 // the longest beginning of a form that ends the cut
		for _, f := range forms {
			for k := len(f) - 1; k > longest; k-- {
				if strings.HasSuffix(cut, f[:k]) {
					longest = k
					break
				}
			}
		}
		if longest > 0 {
			return cut[:len(cut)-longest] + "[secret]…"
		}
	}
	return msg
}

func longerFirst(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) }
