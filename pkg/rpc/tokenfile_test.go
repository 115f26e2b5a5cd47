package rpc_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/rpc"
)

// TestTokenFileReload: a changed token file is served from the next
// Reload; an unchanged one is not read as a change; one that does not
// parse is refused and the tokens stay as they were.
func TestTokenFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tokens": [{"token": "old-token-0123456789", "principal": "user:bo"}]}`)
	f, err := rpc.OpenTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); changed || err != nil {
		t.Errorf("Reload of the same file = %v, %v; want no change", changed, err)
	}
	write(`{"tokens": [{"token": "new-token-0123456789", "principal": "user:bo"}]}`)
	if changed, err := f.Reload(); !changed || err != nil {
		t.Fatalf("Reload of a changed file = %v, %v", changed, err)
	}
	tokens := f.Tokens()
	if _, old := tokens["old-token-0123456789"]; old || tokens["new-token-0123456789"].Principal != "user:bo" {
		t.Fatalf("after the change the tokens are %v; want the new one alone", tokens)
	}
	write(`{"tokens": [{"token": "short", "principal": "user:bo"}]}`)
	if changed, err := f.Reload(); changed || err == nil {
		t.Errorf("Reload of a broken file = %v, %v; want refused", changed, err)
	}
	if changed, err := f.Reload(); changed || err != nil {
		t.Errorf("Reload of the same broken file again = %v, %v; want it reported once", changed, err)
	}
	if _, ok := f.Tokens()["new-token-0123456789"]; !ok {
		t.Error("a broken file changed the tokens")
	}
	if _, err := rpc.OpenTokenFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("OpenTokenFile of a missing file succeeded")
	}
}

// TestTokenFileReloadBounded: a token file past MaxTokenFileBytes is
// refused without being read whole, and one removed (or unreadable) is
// reported once, not every 2 s; either way the tokens stay as they were,
// and the file put back is served again.
func TestTokenFileReloadBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	good := []byte(`{"tokens": [{"token": "old-token-0123456789", "principal": "user:bo"}]}`)
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := rpc.OpenTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	huge := append(bytes.Repeat([]byte(" "), rpc.MaxTokenFileBytes), good...)
	if err := os.WriteFile(path, huge, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); changed || err == nil || !strings.Contains(err.Error(), fmt.Sprint(rpc.MaxTokenFileBytes)) {
		t.Errorf("Reload of a file past the limit = %v, %v; want refused, naming the limit", changed, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); changed || err == nil {
		t.Errorf("Reload of a removed file = %v, %v; want an error", changed, err)
	}
	if changed, err := f.Reload(); changed || err != nil {
		t.Errorf("Reload of the removed file again = %v, %v; want it reported once", changed, err)
	}
	if _, ok := f.Tokens()["old-token-0123456789"]; !ok {
		t.Error("a removed or oversized file changed the tokens")
	}
	if err := os.WriteFile(path, []byte(`{"tokens": [{"token": "new-token-0123456789", "principal": "user:bo"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := f.Reload(); !changed || err != nil {
		t.Errorf("Reload of the file put back = %v, %v", changed, err)
	}
}
