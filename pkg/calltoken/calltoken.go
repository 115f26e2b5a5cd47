// Package calltoken is the signed token Steward sends with every HTTP tool
// call, and what a tool needs to check it: that the call comes from
// Steward's execution plane, for this tool, with this body, now, and once.
//
// A token is a compact JWS (RFC 7515), signed with Ed25519 ("EdDSA", RFC
// 8037) by the execution plane's call key, in the Steward-Call-Token
// header of every call and status query. Its public key is published as a
// JWKS (RFC 7517) at WellKnownPath of the execution plane's HTTP address,
// and, in steward dev, in DATA/call-keys.json. Any JOSE library can verify
// it; this package does it with the standard library alone, so that a Go
// tool needs nothing else (docs/calltokens.md).
//
// Signer, KeySet, Verifier and MemoryReplayCache are safe for concurrent
// use.
package calltoken

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Header is the HTTP header a call's token travels in.
const Header = "Steward-Call-Token"

// WellKnownPath is where Steward's HTTP server publishes the call keys, a
// JWKS.
const WellKnownPath = "/.well-known/steward/call-keys.json"

// Issuer is every token's iss.
const Issuer = "steward"

// Skew is how long a token outlives its call's timeout, and how far a
// Verifier lets clocks disagree by default.
const Skew = 10 * time.Second

// Claims is what a token says about one request to a tool.
type Claims struct {
	// Issuer is always Issuer.
	Issuer string `json:"iss"`
	// Audience is the tool's call URL as its contract registers it
	// (http.url), for its status queries too: a token for one tool is
	// refused by another, even one of the same name in another tenant.
	Audience string `json:"aud"`
	// Method is the HTTP method of the request: POST for a call, GET for a
	// status query.
	Method string `json:"htm"`
	// TaskID, ActionID and OpKey are the task, the action and the op_key
	// (the Idempotency-Key header of a call, the op_key query parameter of
	// a status query).
	TaskID   string `json:"task_id"`
	ActionID string `json:"action_id"`
	OpKey    string `json:"op_key"`
	// Tool and ToolVersion name the tool contract called.
	Tool        string `json:"tool"`
	ToolVersion string `json:"tool_version,omitempty"`
	// Attempt is which dispatch of the action this call is (1, 2, …); 0
	// on a status query.
	Attempt uint32 `json:"attempt,omitempty"`
	// RequestHash is the action's request_hash, which its permit and any
	// approval bind to: hex SHA-256 of the canonical request, with secret
	// parameters as their commitments (docs/secrets.md).
	RequestHash string `json:"request_hash,omitempty"`
	// BodyHash is hex SHA-256 of the body as sent (BodyHash): the same as
	// RequestHash unless secret parameters were opened into the body.
	// Empty on a status query, which has no body.
	BodyHash string `json:"body_hash,omitempty"`
	// IssuedAt and ExpiresAt are Unix seconds: a token lasts the call's
	// timeout plus Skew.
	IssuedAt  int64 `json:"iat"`
	ExpiresAt int64 `json:"exp"`
	// ID is unique to the token: a replay cache refuses a second use.
	ID string `json:"jti"`
}

// BodyHash is the hash a token carries of body: hex SHA-256.
func BodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
