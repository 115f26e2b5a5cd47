package credential_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolpin"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func newSigner(t *testing.T) *credential.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return credential.NewSigner(key)
}

func rootContract() *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		TaskId:       "task-root",
		AllowedTools: []string{"search", "wire"},
		Scopes:       []string{"payments:write", "mail:read"},
		Budget:       &stewardv1.Budget{MaxTokens: 1000, MaxCostMicros: 5000},
		Deadline:     timestamppb.New(now.Add(48 * time.Hour)),
	}
}

func TestRootTakesTheContractAndTheSoonerExpiry(t *testing.T) {
	c := credential.Root(rootContract(), "user:ana", now, time.Hour)
	switch {
	case c.CredentialId != credential.ID("task-root", ""), c.TaskId != "task-root", c.Principal != "user:ana":
		t.Errorf("identity: %v", c)
	case !c.ExpiresAt.AsTime().Equal(now.Add(time.Hour)):
		t.Errorf("expires %v: the ttl is sooner than the deadline", c.ExpiresAt.AsTime())
	case c.MaxTokens != 1000 || c.MaxCostMicros != 5000 || len(c.AllowedTools) != 2 || len(c.Scopes) != 2:
		t.Errorf("bounds: %v", c)
	}
	if c := credential.Root(rootContract(), "user:ana", now, 0); !c.ExpiresAt.AsTime().Equal(now.Add(48 * time.Hour)) {
		t.Errorf("expires %v: the deadline is sooner than the default ttl", c.ExpiresAt.AsTime())
	}
	if id := credential.ID("task-child", c0().CredentialId); id == credential.ID("task-child", "") {
		t.Error("a delegated credential's id does not depend on its parent")
	}
}

func c0() *stewardv1.TaskCredential { return credential.Root(rootContract(), "user:ana", now, 0) }

func TestSignAndVerify(t *testing.T) {
	s := newSigner(t)
	signed, err := s.Sign(c0())
	if err != nil {
		t.Fatal(err)
	}
	got, err := credential.Verify(signed, s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	if got.KeyId != s.KeyID() || got.CredentialId != c0().CredentialId {
		t.Errorf("verified %v", got)
	}
	// Without a trusted key the carried key is used: integrity only.
	if _, err := credential.Verify(signed); err != nil {
		t.Errorf("verify with the carried key: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	s, other := newSigner(t), newSigner(t)
	signed, err := s.Sign(c0())
	if err != nil {
		t.Fatal(err)
	}
	tampered := proto.CloneOf(signed)
	tampered.Credential[len(tampered.Credential)-1] ^= 1
	badSig := proto.CloneOf(signed)
	badSig.Signature[0] ^= 1
	// Validly signed by another key, but the bytes name the first key.
	otherPub, otherPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forged := proto.CloneOf(signed)
	forged.Signature = ed25519.Sign(otherPriv, forged.Credential)
	forged.PublicKey = otherPub
	for _, tc := range []struct {
		name    string
		s       *stewardv1.SignedCredential
		trusted []ed25519.PublicKey
		want    string
	}{
		{"tampered bytes", tampered, nil, "does not verify"},
		{"tampered signature", badSig, nil, "does not verify"},
		{"untrusted key", signed, []ed25519.PublicKey{other.PublicKey()}, "not trusted"},
		{"key id mismatch", forged, nil, "names key"},
		{"no key", &stewardv1.SignedCredential{Credential: signed.Credential}, nil, "no Ed25519 public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := credential.Verify(tc.s, tc.trusted...)
			if !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a corrupt error with %q", err, tc.want)
			}
		})
	}
}

func childContract() *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		TaskId:       "task-child",
		AllowedTools: []string{"search"},
		Scopes:       []string{"mail:read"},
		Budget:       &stewardv1.Budget{MaxTokens: 100},
	}
}

func TestVerifyChain(t *testing.T) {
	s := newSigner(t)
	root := c0()
	rootSigned, _ := s.Sign(root)
	child := credential.Delegated(root, childContract(), "agent:sub", now)
	childSigned, _ := s.Sign(child)

	got, err := credential.VerifyChain(childSigned, []*stewardv1.SignedCredential{rootSigned}, s.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case got.Principal != "agent:sub" || got.ParentCredentialId != root.CredentialId || got.ParentTaskId != "task-root":
		t.Errorf("leaf %v", got)
	case got.MaxCostMicros != 5000:
		t.Errorf("the unset cost cap is %d, want the parent's 5000", got.MaxCostMicros)
	case !got.ExpiresAt.AsTime().Equal(root.ExpiresAt.AsTime()):
		t.Errorf("the unset deadline gives expiry %v, want the parent's", got.ExpiresAt.AsTime())
	}

	// A link that widens its parent is caught offline, even though it is
	// properly signed.
	wide := proto.CloneOf(child)
	wide.AllowedTools = []string{"search", "shell"}
	wideSigned, _ := s.Sign(wide)
	_, err = credential.VerifyChain(wideSigned, []*stewardv1.SignedCredential{rootSigned}, s.PublicKey())
	if err == nil || !strings.Contains(err.Error(), "link 1") || !strings.Contains(err.Error(), "widens") || !strings.Contains(err.Error(), `"shell"`) {
		t.Errorf("widening link: %v", err)
	}
	uncapped := proto.CloneOf(child)
	uncapped.MaxTokens = 0
	uncappedSigned, _ := s.Sign(uncapped)
	if _, err := credential.VerifyChain(uncappedSigned, []*stewardv1.SignedCredential{rootSigned}); err == nil || !strings.Contains(err.Error(), "max_tokens") {
		t.Errorf("uncapped link: %v", err)
	}

	// The chain must hold the parent the leaf names.
	if _, err := credential.VerifyChain(childSigned, nil, s.PublicKey()); err == nil || !strings.Contains(err.Error(), "link 0") {
		t.Errorf("missing parent: %v", err)
	}
	orphan := proto.CloneOf(child)
	orphan.ParentCredentialId = "cred-other"
	orphanSigned, _ := s.Sign(orphan)
	if _, err := credential.VerifyChain(orphanSigned, []*stewardv1.SignedCredential{rootSigned}); err == nil || !strings.Contains(err.Error(), "names parent") {
		t.Errorf("wrong parent: %v", err)
	}
	// A link signed by an untrusted key breaks the chain at that link.
	other := newSigner(t)
	foreign, _ := other.Sign(child)
	if _, err := credential.VerifyChain(foreign, []*stewardv1.SignedCredential{rootSigned}, s.PublicKey()); err == nil || !strings.Contains(err.Error(), "link 1") || !strings.Contains(err.Error(), "not trusted") {
		t.Errorf("untrusted link: %v", err)
	}
	// Without trusted keys, a link signed by another hand than the root's
	// breaks the chain too.
	if _, err := credential.VerifyChain(foreign, []*stewardv1.SignedCredential{rootSigned}); err == nil || !strings.Contains(err.Error(), "link 1") || !strings.Contains(err.Error(), "its parent by") {
		t.Errorf("mixed keys: %v", err)
	}
}

func TestNarrowsNamesTheWideningField(t *testing.T) {
	parent := c0()
	for _, tc := range []struct {
		field  string
		change func(*stewardv1.TaskContract)
	}{
		{"contract.allowed_tools[1]", func(c *stewardv1.TaskContract) { c.AllowedTools = []string{"search", "shell"} }},
		{"contract.scopes[0]", func(c *stewardv1.TaskContract) { c.Scopes = []string{"admin"} }},
		{"contract.budget.max_tokens", func(c *stewardv1.TaskContract) { c.Budget.MaxTokens = 1001 }},
		{"contract.budget.max_cost_micros", func(c *stewardv1.TaskContract) { c.Budget.MaxCostMicros = 5001 }},
		{"contract.deadline", func(c *stewardv1.TaskContract) { c.Deadline = timestamppb.New(now.Add(49 * time.Hour)) }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := childContract()
			tc.change(c)
			err := credential.Narrows(parent, c)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tc.field {
				t.Errorf("got %v, want an invalid %s", err, tc.field)
			}
		})
	}
	if err := credential.Narrows(parent, childContract()); err != nil {
		t.Errorf("a narrower contract: %v", err)
	}
	// Keeping everything is allowed: a delegation may keep.
	same := rootContract()
	if err := credential.Narrows(parent, same); err != nil {
		t.Errorf("an equal contract: %v", err)
	}
}

// TestNarrowsKeepsPins: a pinned parent tool allows the child that
// version only; a child may pin a tool its parent leaves unpinned.
func TestNarrowsKeepsPins(t *testing.T) {
	parent := c0()
	parent.AllowedTools = []string{"search", "fetch@2.0.0"}
	for _, tc := range []struct {
		tools []string
		ok    bool
	}{
		{[]string{"search@1.2.0"}, true},
		{[]string{"search", "fetch@2.0.0"}, true},
		{[]string{"fetch@2.1.0"}, false},
		{[]string{"search", "fetch"}, false}, // unpinning widens
	} {
		c := rootContract()
		c.AllowedTools = tc.tools
		err := credential.Narrows(parent, c)
		if tc.ok && err != nil {
			t.Errorf("%v: %v", tc.tools, err)
		}
		if !tc.ok && (!errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "contract.allowed_tools[")) {
			t.Errorf("%v: got %v, want contract.allowed_tools[i] refused", tc.tools, err)
		}
	}
}

func TestCovers(t *testing.T) {
	c := c0()
	c.AllowedTools = append(c.AllowedTools, "fetch@2.0.0")
	for _, tc := range []struct {
		name   string
		tool   string
		scopes []string
		// version is the tool's; fetch is pinned to 2.0.0, the others
		// allow any.
		at   time.Time
		code errs.Code
		want string
	}{
		{"covered", "wire", []string{"payments:write"}, now, 0, ""},
		{"pinned version", "fetch", nil, now, 0, ""},
		{"no scopes needed", "search", nil, now, 0, ""},
		{"expired", "search", nil, now.Add(48 * time.Hour), errs.FailedPrecondition, "expired"},
		{"tool", "shell", nil, now, errs.PermissionDenied, "does not cover tool shell"},
		{"another version than the pin", "fetch@2.1.0", nil, now, errs.PermissionDenied, `covers tool fetch at version "2.0.0" only, not "2.1.0"`},
		{"scope", "wire", []string{"payments:write", "payments:admin"}, now, errs.PermissionDenied, `scope "payments:admin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, version := toolpin.Split(tc.tool)
			if tool == "fetch" && version == "" {
				version = "2.0.0"
			}
			err := credential.Covers(c, tool, version, tc.scopes, tc.at)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errs.Is(err, tc.code) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), c.CredentialId) {
				t.Errorf("got %v, want %v naming %s and %q", err, tc.code, c.CredentialId, tc.want)
			}
		})
	}
	if err := credential.Covers(nil, "search", "1.0.0", nil, now); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("no credential: %v", err)
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "credential.key")
	key, created, err := credential.LoadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("create: %v, created %v", err, created)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	again, created, err := credential.LoadOrCreateKey(path)
	if err != nil || created || !again.Equal(key) {
		t.Fatalf("load again: %v, created %v, same %v", err, created, again.Equal(key))
	}
	pub := key.Public().(ed25519.PublicKey)
	pemBytes, err := credential.MarshalPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"pem": pemBytes,
		"hex": []byte(hex.EncodeToString(pub) + "\n"),
	} {
		got, err := credential.ParsePublicKey(data)
		if err != nil || !got.Equal(pub) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := credential.ParsePublicKey([]byte("not a key")); err == nil {
		t.Error("parsed garbage")
	}
	if _, err := credential.LoadKey(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("missing key: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pub.pem"), pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := credential.LoadKey(filepath.Join(dir, "pub.pem")); err == nil {
		t.Error("a public key loaded as a private key")
	}
	if got, err := credential.LoadPublicKey(filepath.Join(dir, "pub.pem")); err != nil || !got.Equal(pub) {
		t.Errorf("load public key: %v", err)
	}
}
