package policy_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance/policy"
)

// refusedCases are bodies of a rule that use a refused built-in, by the
// built-in: called, as a term inside an expression, and named as a value
// with `with`, which is a reference, not a call, and replaced with
// `with`. url is a server that
// counts the requests it gets.
func refusedCases(url string) map[string]string {
	return map[string]string{
		"http.send":         "r := http.send({\"method\": \"GET\", \"url\": \"" + url + "\"})\n\tr.status_code == 200",
		"time.now_ns":       "time.now_ns() > 0",
		"rand.intn":         "x := 1 + rand.intn(\"k\", 10)\n\tx > 0",
		"uuid.rfc4122":      "count(uuid.rfc4122(\"k\")) > 0",
		"opa.runtime":       "opa.runtime().env != {}",
		"with http.send":    "r := f({\"method\": \"GET\", \"url\": \"" + url + "\"}) with f as http.send\n\tr.status_code == 200",
		"with rand.intn":    "r := g(\"k\", 10) with g as rand.intn\n\tr > 0",
		"with uuid.rfc4122": "r := f(\"k\") with f as uuid.rfc4122\n\tcount(r) > 0",
		"with opa.runtime":  "r := rt() with rt as opa.runtime\n\tr.env != {}",
		"with time.now_ns":  "r := rt() with rt as time.now_ns\n\tr > 0",
		"crypto.x509.parse_and_verify_certificates": "[ok, _] := crypto.x509.parse_and_verify_certificates(\"x\")\n\tok",
	}
}

// extraModule is a module of the bundle with a rule whose body is body,
// and functions to stand in for built-ins.
func extraModule(body string) string {
	return "package steward.extra\n\nf(x) := x\n\ng(k, n) := n\n\nrt() := {}\n\nflag if {\n\t" + body + "\n}\n"
}

// builtinOf is the built-in a refusedCases case is about.
func builtinOf(name string) string {
	return strings.TrimPrefix(strings.TrimPrefix(name, "with "), "replaced ")
}

// countingServer counts the requests it gets: a refused bundle makes none.
func countingServer(t *testing.T) (string, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &hits
}

// TestNondeterministicBuiltinsAreRefused: a bundle that uses a built-in
// whose answer is not recorded (the network, the clock, chance, the
// process) does not load, and the error names the file, the line and the
// built-in — however it names the built-in — and no request is made. The
// default bundle and the examples still load, and a local variable that
// happens to be named like a built-in is not one.
func TestNondeterministicBuiltinsAreRefused(t *testing.T) {
	ctx := context.Background()
	url, hits := countingServer(t)
	for name, body := range refusedCases(url) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeRego(t, dir, "steward.rego", defaultPolicy(t))
			writeRego(t, dir, "extra.rego", extraModule(body))
			_, err := policy.Load(ctx, dir)
			assertRefused(t, "Load", err, "extra.rego:", builtinOf(name))
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
	for _, dir := range []string{"", filepath.Join("examples", "model_decisions"), filepath.Join("examples", "pinned_inputs")} {
		if _, err := policy.Load(ctx, dir); err != nil {
			t.Errorf("bundle %q: %v", dir, err)
		}
	}
	dir := t.TempDir()
	writeRego(t, dir, "steward.rego", defaultPolicy(t))
	writeRego(t, dir, "extra.rego", extraModule("http := {\"send\": 1}\n\thttp.send == 1"))
	if _, err := policy.Load(ctx, dir); err != nil {
		t.Errorf("a local variable named http: %v", err)
	}
}

// TestRestoreRefusesNondeterministicBuiltins: an auditor restoring a
// bundle's sources, which they need not trust, compiles them under the
// same refusal: the error names the file, line and built-in, and nothing
// is fetched.
func TestRestoreRefusesNondeterministicBuiltins(t *testing.T) {
	ctx := context.Background()
	url, hits := countingServer(t)
	for name, body := range refusedCases(url) {
		t.Run(name, func(t *testing.T) {
			_, err := policy.Restore(ctx, sourcesOf(t, map[string]string{
				"steward.rego": defaultPolicy(t),
				"extra.rego":   extraModule(body),
			}))
			assertRefused(t, "Restore", err, filepath.Join("policy", "extra.rego")+":", builtinOf(name))
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server got %d requests", n)
	}
	if _, err := policy.Restore(ctx, sourcesOf(t, map[string]string{"steward.rego": defaultPolicy(t)})); err != nil {
		t.Errorf("the default bundle: %v", err)
	}
}

// TestReloadRefusesNondeterministicBuiltins: a reload to a bundle that
// uses one fails, naming it, and the bundle in force stays.
func TestReloadRefusesNondeterministicBuiltins(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeRego(t, dir, "steward.rego", defaultPolicy(t))
	e, err := policy.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	before := e.Revision()
	writeRego(t, dir, "extra.rego", extraModule("r := f(\"k\") with f as uuid.rfc4122\n\tcount(r) > 0"))
	changed, err := e.Reload(ctx)
	assertRefused(t, "Reload", err, "extra.rego:", "uuid.rfc4122")
	if changed || e.Revision() != before {
		t.Errorf("Reload changed the bundle in force: %v, %s, was %s", changed, e.Revision(), before)
	}
}

func assertRefused(t *testing.T, what string, err error, file, builtin string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "built-in "+builtin+" is refused") {
		t.Fatalf("%s = %v, want a refusal naming %s and %s", what, err, file, builtin)
	}
}

// sourcesOf is files as governance keeps them, with their revision.
func sourcesOf(t *testing.T, files map[string]string) *stewardv1.PolicySources {
	t.Helper()
	raw := map[string][]byte{}
	src := &stewardv1.PolicySources{OpaVersion: policy.OPAVersion()}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		raw[name] = []byte(files[name])
		src.Files = append(src.Files, &stewardv1.PolicyFile{Path: name, Content: raw[name]})
	}
	src.Revision = policy.RevisionOf(raw)
	return src
}

func defaultPolicy(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("default", "steward.rego"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func writeRego(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
