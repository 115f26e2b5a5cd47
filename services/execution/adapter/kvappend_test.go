package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/adapter"
)

func kvBucket(t *testing.T) jetstream.KeyValue {
	t.Helper()
	bus := stewardtest.StartBus(t)
	kv, err := bus.JS.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "TEST"})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestKVAppend(t *testing.T) {
	ctx := context.Background()
	kv := kvBucket(t)
	a := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: t.TempDir(), KV: kv})
	record := map[string]any{"event": "shipped", "qty": 3}
	req := builtinRequest(t, adapter.KindKVAppend, "op-1", map[string]any{"key": "orders.o-1", "record": record})

	first := mustSucceed(t, a.Call(ctx, req))

	var res struct {
		Key      string `json:"key"`
		Revision uint64 `json:"revision"`
	}
	if err := json.Unmarshal(first, &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Key, "orders.o-1.") || res.Revision == 0 {
		t.Fatalf("result = %s, want a key under orders.o-1 and a revision", first)
	}
	entry, err := kv.Get(ctx, res.Key)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(record); string(entry.Value()) != string(want) || entry.Revision() != res.Revision {
		t.Errorf("entry = %s rev %d, want %s rev %d", entry.Value(), entry.Revision(), want, res.Revision)
	}

	// The same key again, through another adapter: the first result, no new entry.
	again := mustSucceed(t, newBuiltin(t, adapter.BuiltinConfig{SandboxDir: t.TempDir(), KV: kv}).Call(ctx, req))
	if string(again) != string(first) {
		t.Errorf("repeat got %s, first got %s", again, first)
	}
	if keys := kvKeys(t, kv); len(keys) != 1 {
		t.Errorf("keys after a repeat = %q, want one", keys)
	}
	mustStatus(t, a, req, adapter.StatusAnswer{State: adapter.StateSucceeded, Result: first})

	// A new op_key appends.
	next := builtinRequest(t, adapter.KindKVAppend, "op-2", map[string]any{"key": "orders.o-1", "record": record})
	mustStatus(t, a, next, adapter.StatusAnswer{State: adapter.StateNotAccepted})
	second := mustSucceed(t, a.Call(ctx, next))
	var res2 struct{ Revision uint64 }
	if err := json.Unmarshal(second, &res2); err != nil {
		t.Fatal(err)
	}
	if res2.Revision <= res.Revision {
		t.Errorf("second append revision %d, first %d", res2.Revision, res.Revision)
	}
	if keys := kvKeys(t, kv); len(keys) != 2 {
		t.Errorf("keys after two appends = %q, want two", keys)
	}
}

func TestKVAppendRejectsBadParams(t *testing.T) {
	a := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: t.TempDir(), KV: kvBucket(t)})
	tests := []struct {
		name   string
		params map[string]any
		reason string
	}{
		{"no key", map[string]any{"record": 1}, "not a valid KV key"},
		{"key with a space", map[string]any{"key": "a b", "record": 1}, "not a valid KV key"},
		{"key with a wildcard", map[string]any{"key": "orders.*", "record": 1}, "not a valid KV key"},
		{"key with an empty token", map[string]any{"key": "orders..x", "record": 1}, "not a valid KV key"},
		{"no record", map[string]any{"key": "orders"}, "record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := a.Call(context.Background(), builtinRequest(t, adapter.KindKVAppend, "op-1", tt.params))
			if got.Status != failedStatus || got.FailureClass != determClass {
				t.Fatalf("got %v/%v (%s), want FAILED/DETERMINISTIC", got.Status, got.FailureClass, got.Reason)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", got.Reason, tt.reason)
			}
		})
	}
}

func kvKeys(t *testing.T, kv jetstream.KeyValue) []string {
	t.Helper()
	keys, err := kv.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
