package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/rpc"
)

func TestToConnectIsTheOneTable(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	tests := []struct {
		err     error
		code    connect.Code
		message string
	}{
		{errs.Field("contract.intent", "is required"), connect.CodeInvalidArgument, "contract.intent: is required"},
		{errs.New(errs.NotFound, "task x not found"), connect.CodeNotFound, "task x not found"},
		{errs.New(errs.FailedPrecondition, "it is cancelled"), connect.CodeFailedPrecondition, "cancelled"},
		{errs.New(errs.Conflict, "busy"), connect.CodeAborted, "busy"},
		{errs.New(errs.PermissionDenied, "no role"), connect.CodePermissionDenied, "no role"},
		{errs.New(errs.Corrupt, "chain broken"), connect.CodeDataLoss, "chain broken"},
		{errs.Wrap(errs.Unavailable, errors.New("nats: secret internals"), "append"), connect.CodeUnavailable, "try again"},
		{errors.New("a bug with internals"), connect.CodeInternal, "server log"},
		// Steward's own timeout on the bus, while the caller still waits.
		{fmt.Errorf("append to steward.task.x (internals): %w", context.DeadlineExceeded), connect.CodeUnavailable, "try again"},
		{errs.Wrap(errs.Conflict, context.DeadlineExceeded, "busy"), connect.CodeAborted, "busy"},
	}
	for _, tt := range tests {
		got := rpc.ToConnect(ctx, log, tt.err)
		if connect.CodeOf(got) != tt.code || !strings.Contains(got.Error(), tt.message) {
			t.Errorf("%v → %v, want %v mentioning %q", tt.err, got, tt.code, tt.message)
		}
		if strings.Contains(got.Error(), "internals") {
			t.Errorf("%v leaked internals: %v", tt.err, got)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if got := rpc.ToConnect(gone, log, errs.Wrap(errs.Unavailable, context.Canceled, "append")); connect.CodeOf(got) != connect.CodeCanceled {
		t.Errorf("a caller who gave up: %v, want canceled", got)
	}
	var cerr *connect.Error
	if errors.As(rpc.ToConnect(ctx, log, errs.Field("params/amount", "too small")), &cerr) && len(cerr.Details()) != 1 {
		t.Errorf("invalid input should carry a BadRequest detail naming the field")
	}
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		p := filepath.Join(dir, "tokens.json")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokens, err := rpc.LoadTokens(write(`{"tokens": [{"token": "0123456789abcdef", "principal": "user:bo", "roles": ["authorizer"]},
		{"token": "acme-0123456789abcdef", "principal": "user:bo", "tenant": "acme"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if id := tokens["0123456789abcdef"]; id.Principal != "user:bo" || !id.HasRole("viewer", "authorizer") || id.HasRole("viewer") || id.Tenant != "" {
		t.Fatalf("identity = %+v", id)
	}
	if id := tokens["acme-0123456789abcdef"]; id.Principal != "user:bo" || id.Tenant != "acme" {
		t.Fatalf("identity of tenant acme = %+v", id)
	}
	for _, bad := range []string{
		`{"tokens": [{"token": "short", "principal": "p"}]}`,
		`{"tokens": [{"token": "0123456789abcdef"}]}`,
		`{"tokens": [{"token": "0123456789abcdef", "principal": "a"}, {"token": "0123456789abcdef", "principal": "b"}]}`,
		`not json`,
		// A misspelt field would grant nothing, silently: the roles here,
		// every token there.
		`{"tokens": [{"token": "0123456789abcdef", "principal": "user:ops", "role": ["operator"]}]}`,
		`{"token": [{"token": "0123456789abcdef", "principal": "user:ops"}]}`,
		`{"tokens": [{"token": "0123456789abcdef", "principal": "user:ops", "tenant": "ac\u200bme"}]}`,
		`{"tokens": [{"token": "0123456789abcdef", "principal": "user:ops", "tenant": 7}]}`,
	} {
		if _, err := rpc.LoadTokens(write(bad)); err == nil {
			t.Errorf("token file %s was accepted", bad)
		}
	}
}
