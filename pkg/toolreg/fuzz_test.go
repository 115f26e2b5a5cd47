package toolreg_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/toolpin"
	"github.com/steward-run/steward/pkg/toolreg"
)

// FuzzValidate registers tool contracts as RegisterTool receives them:
// decoded by the edge's strict codec and passed by its limits. A refused
// contract is refused naming a field of it. An accepted one is accepted
// again after a trip through JSON; its registration seals and opens; the
// registry, replaying that event, holds it usable (its schemas compile
// again) under its name and version; and a task can pin it: name@version
// splits back into exactly its name and version, with no second '@' for
// a task contract to refuse.
func FuzzValidate(f *testing.F) {
	for _, body := range stewardtest.BadRequestsFor(f, "/RegisterTool", 4<<10) {
		f.Add(body)
	}
	for _, c := range []string{
		`{"contract": {"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "parametersSchema": "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"pattern\":\"^a+$\"}}}", "http": {"url": "https://tools.example/search"}}}`,
		`{"contract": {"name": "w", "version": "2", "effectClass": "EFFECT_CLASS_REVERSIBLE_WRITE", "compensatingTool": "undo", "dataSensitivity": "DATA_SENSITIVITY_RESTRICTED", "builtin": {"kind": "file.write"}, "timeout": "30s", "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "10s"}, "idempotency": {"honoursKey": true, "keyScope": "action", "retention": "3600s"}, "serviceKey": "files"}}`,
		`{"contract": {"name": "s", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": "http://h/x", "statusUrl": "http://h/s"}, "statusQuery": true, "resultSchema": "{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"type\":\"object\"}}}"}}`,
	} {
		f.Add(c)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, body string) {
		var req stewardv1.RegisterToolRequest
		if rpc.Decode("json", []byte(body), &req) != nil || limits.Check(req.ProtoReflect()) != nil {
			return
		}
		c := req.Contract
		if err := toolreg.New(nil).Validate(c); err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !strings.HasPrefix(e.Field, "contract") {
				t.Fatalf("refused without naming a field of the contract: %v", err)
			}
			return
		}
		if err := toolreg.New(nil).Validate(stewardtest.SameAfterJSON(t, c)); err != nil {
			t.Fatalf("accepted, then refused after a trip through JSON: %v", err)
		}
		registered(t, c, log)
		name, version := toolpin.Split(toolreg.Key(c.Name, c.Version))
		if name != c.Name || version != c.Version || strings.Contains(version, "@") {
			t.Fatalf("tool %q version %q cannot be pinned: %s splits into %q and %q", c.Name, c.Version, toolreg.Key(c.Name, c.Version), name, version)
		}
	})
}

// registered records c as the execution plane does, and checks that the
// registry, replaying the event, holds it usable.
func registered(t *testing.T, c *stewardv1.ToolContract, log *slog.Logger) {
	t.Helper()
	ev, err := event.New(event.Meta{Time: time.Unix(1, 0)}, &stewardv1.ToolRegistered{Contract: c})
	if err != nil {
		t.Fatal(err)
	}
	data, err := event.Seal(ev, nil)
	if err != nil {
		t.Fatalf("an accepted contract does not seal: %v", err)
	}
	opened, err := event.Open(data)
	if err != nil {
		t.Fatalf("an accepted contract's registration does not open: %v", err)
	}
	reg := toolreg.New(log)
	if err := reg.Apply(&stewardv1.EventRecord{Sequence: 1, Event: opened}); err != nil {
		t.Fatal(err)
	}
	e, err := reg.Get("", c.Name, c.Version)
	if err != nil || e.Unusable != nil || e.Schema == nil {
		t.Fatalf("accepted, but the registry holds %+v (%v)", e, err)
	}
	if err := e.Schema.Validate(context.Background(), []byte(`{}`)); err != nil {
		var v *action.Violation
		if !errors.As(err, &v) && !errs.Is(err, errs.TooLarge) {
			t.Fatalf("checking {} against the schema failed unlike a violation: %v", err)
		}
	}
}
