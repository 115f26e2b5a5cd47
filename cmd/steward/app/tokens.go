package app

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/keyfile"
)

// TokensFileName is the token file `steward dev` creates in its data
// directory on first start when neither --auth nor --insecure is given.
const TokensFileName = "tokens.json"

// devIdentities are the identities of a new dev token file, one per kind
// of caller the README's walkthrough plays: an admin who may call anything,
// the agent (no role: it acts for the tasks it creates), an approver with
// the role the default policy's approvals ask for, and an operator.
var devIdentities = []struct {
	Principal string
	Roles     []string
}{
	{"user:admin", []string{access.Admin}},
	{"agent:dev", []string{}},
	{"user:approver", []string{"authorizer"}},
	{"user:operator", []string{access.Operator}},
}

// devTokens returns the path of dir's token file, creating it, mode 0600,
// with a fresh random token for each of devIdentities when there is none:
// created says so. An existing file is never rewritten.
func devTokens(dir string) (path string, created bool, err error) {
	path = filepath.Join(dir, TokensFileName)
	type entry struct {
		Token     string   `json:"token"`
		Principal string   `json:"principal"`
		Roles     []string `json:"roles"`
	}
	var file struct {
		Tokens []entry `json:"tokens"`
	}
	for _, id := range devIdentities {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return "", false, err
		}
		file.Tokens = append(file.Tokens, entry{Token: base64.RawURLEncoding.EncodeToString(b), Principal: id.Principal, Roles: id.Roles})
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return "", false, err
	}
	// Created whole and once (keyfile.Create): two starts racing on one
	// data directory share the first one's tokens, and neither they nor a
	// start after a crash ever read a file half written.
	if created, err = keyfile.Create(path, append(data, '\n')); err != nil {
		return "", false, err
	}
	return path, created, nil
}

// tokensHelp is what `steward dev` prints once, when it creates its token
// file.
const tokensHelp = `steward: created %s (mode 0600): bearer tokens for user:admin (admin), agent:dev, user:approver (authorizer) and user:operator (operator); every call needs one, e.g.
  curl -H "Authorization: Bearer $(jq -r '.tokens[0].token' %s)" ...
steward: %s; see docs/auth.md, or --insecure for the open mode
`

// printTokensHelp tells, once, where the new token file is and how to use
// a token.
func (m *Server) printTokensHelp(path string) {
	shown := path
	if rel, err := filepath.Rel(".", path); err == nil && !filepath.IsAbs(m.DataDir) {
		shown = rel
	}
	// The CLI finds the admin token by itself only in the default data
	// directory (localToken).
	cli := "the CLI (audit, receipt) takes --token or $" + TokenEnv
	if filepath.Clean(m.DataDir) == filepath.Clean(DefaultDataDir) {
		cli = "the CLI (audit, receipt), run here, uses the admin token by itself"
	}
	fmt.Fprintf(m.stdout, tokensHelp, shown, shown, cli)
}
