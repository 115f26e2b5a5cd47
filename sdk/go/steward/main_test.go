package steward_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/steward-run/steward/cmd/steward/app"
)

// stewardURL is the address of the Steward the tests and examples call:
// `steward dev` in this process, with the example tools; agentToken is
// its agent's bearer token, approverToken its approver's.
var stewardURL, agentToken, approverToken string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "steward-sdk")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s := app.NewServer(io.Discard, os.Stderr)
	err = s.ParseFlags("dev", []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--log-level", "warn",
		"--tools", filepath.Join("..", "..", "..", "examples", "tools.json")})
	if err == nil {
		err = s.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "start steward:", err)
		return 1
	}
	defer s.Close()
	stewardURL = s.URL()
	if agentToken, approverToken, err = devTokens(filepath.Join(dir, "data", "tokens.json")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// devTokens reads the agent's and the approver's tokens from the file
// steward dev writes on its first start.
func devTokens(path string) (agent, approver string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	var f struct {
		Tokens []struct{ Principal, Token string }
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return "", "", err
	}
	for _, t := range f.Tokens {
		switch t.Principal {
		case "agent:dev":
			agent = t.Token
		case "user:approver":
			approver = t.Token
		}
	}
	if agent == "" || approver == "" {
		return "", "", fmt.Errorf("%s names no agent:dev or user:approver", path)
	}
	return agent, approver, nil
}
