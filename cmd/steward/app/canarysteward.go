package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/canary"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// canarySteward is a whole Steward started in a temporary directory for
// one canary run: every plane, its own embedded NATS JetStream, the
// policy bundle under test, and the tools registered at start pointed at
// the canary's targets. close tears it down and removes the directory.
type canarySteward struct {
	server *Server
	dir    string
	tokens map[string]string // principal → its bearer token
}

// startCanarySteward starts it, logging warnings to stderr, policyDir ""
// meaning the built-in bundle; approvers get tokens with the authorizer
// role.
func startCanarySteward(ctx context.Context, stderr io.Writer, policyDir string, tools []*stewardv1.ToolContract, approvers []string) (*canarySteward, error) {
	dir, err := os.MkdirTemp("", "steward-canary-*")
	if err != nil {
		return nil, err
	}
	c := &canarySteward{dir: dir, tokens: map[string]string{}}
	args, err := c.files(tools, approvers)
	if err == nil {
		if policyDir != "" {
			args = append(args, "--policy-dir", policyDir)
		}
		// Its warnings and errors are the run's: on stderr.
		c.server = NewServer(io.Discard, stderr)
		err = c.server.ParseFlags("dev", args)
	}
	if err == nil {
		err = c.server.Run(ctx)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("steward for the canary did not start: %w", err)
	}
	return c, nil
}

// files writes the token and tools files and returns the server's flags.
func (c *canarySteward) files(tools []*stewardv1.ToolContract, approvers []string) ([]string, error) {
	type token struct {
		Token     string   `json:"token"`
		Principal string   `json:"principal"`
		Roles     []string `json:"roles"`
	}
	var file struct {
		Tokens []token `json:"tokens"`
	}
	for _, p := range append([]string{canary.Agent}, approvers...) {
		if _, ok := c.tokens[p]; ok {
			continue
		}
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		c.tokens[p] = base64.RawURLEncoding.EncodeToString(b)
		roles := []string{"authorizer"}
		if p == canary.Agent {
			roles = []string{}
		}
		file.Tokens = append(file.Tokens, token{Token: c.tokens[p], Principal: p, Roles: roles})
	}
	auth := filepath.Join(c.dir, "tokens.json")
	if err := writeJSON(auth, file); err != nil {
		return nil, err
	}
	var toolFile struct {
		Tools []json.RawMessage `json:"tools"`
	}
	for _, k := range tools {
		b, err := protojson.Marshal(k)
		if err != nil {
			return nil, err
		}
		toolFile.Tools = append(toolFile.Tools, b)
	}
	toolsPath := filepath.Join(c.dir, "tools.json")
	if err := writeJSON(toolsPath, toolFile); err != nil {
		return nil, err
	}
	return []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(c.dir, "data"), "--auth", auth, "--tools", toolsPath,
		// The tools file's tools are the platform's, which no egress rule
		// holds: each is called at exactly the target the definition
		// names (a stub on loopback, or its staging URL).
		"--log-level", "warn"}, nil
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// client is a client of the canary's Steward signed in as principal.
func (c *canarySteward) client(principal string) (*steward.Client, error) {
	tok, ok := c.tokens[principal]
	if !ok {
		return nil, fmt.Errorf("%s has no token in the canary's Steward", principal)
	}
	return steward.New(c.server.URL(), steward.WithToken(tok)), nil
}

// close stops the Steward and removes its directory.
func (c *canarySteward) close() {
	if c.server != nil {
		c.server.Close()
	}
	_ = os.RemoveAll(c.dir)
}
