package policy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/services/governance/policy"
)

// TestDefaultBundleRegoTests runs the default bundle's _test.rego files
// with RunTests, as `steward policy test` does: this is how CI runs the
// Rego unit tests.
func TestDefaultBundleRegoTests(t *testing.T) {
	results, err := policy.RunTests(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome != policy.TestPass {
			t.Errorf("%s (%s:%d): %s %s", r.Name, r.File, r.Line, r.Outcome, r.Error)
		}
	}
	t.Logf("%d Rego tests ran", len(results))
}

// TestRunTestsNamesWhatDidNotPass: a failing test, one that cannot be
// evaluated and a todo_test_ are each reported as such, by name and
// line, in file order; a bundle without tests, or that does not
// compile, is an error.
func TestRunTestsNamesWhatDidNotPass(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("policy.rego", "package steward.policy\n\ndecision := {\"decision\": \"allow\"}\n")
	if _, err := policy.RunTests(ctx, dir); err == nil || !strings.Contains(err.Error(), "no tests") {
		t.Fatalf("a bundle without tests: %v", err)
	}
	write("policy_test.rego", `package steward.policy_test

import data.steward.policy

test_allows if policy.decision.decision == "allow"

test_denies if policy.decision.decision == "deny"

test_conflicts if twice == 1

todo_test_later if false

twice = 1 if true

twice = 2 if true
`)
	results, err := policy.RunTests(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		got = append(got, fmt.Sprintf("%s:%d %s", strings.TrimPrefix(r.Name, "data.steward.policy_test."), r.Line, r.Outcome))
	}
	want := []string{"test_allows:5 pass", "test_denies:7 fail", "test_conflicts:9 error", "todo_test_later:11 skip"}
	if !slices.Equal(got, want) {
		t.Errorf("results %q, want %q", got, want)
	}
	write("broken.rego", "package steward.policy\n\ndecision := {\n")
	if _, err := policy.RunTests(ctx, dir); err == nil || !strings.Contains(err.Error(), "broken.rego") {
		t.Errorf("a bundle that does not parse: %v", err)
	}
}

// TestDefaultBundleFilesHaveTests holds the rule that every .rego file has a
// _test.rego sibling.
func TestDefaultBundleFilesHaveTests(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("default", "*.rego"))
	if err != nil {
		t.Fatal(err)
	}
	policies := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.rego") {
			continue
		}
		policies++
		if _, err := os.Stat(strings.TrimSuffix(f, ".rego") + "_test.rego"); err != nil {
			t.Errorf("%s has no _test.rego: %v", f, err)
		}
	}
	if policies == 0 {
		t.Fatal("default bundle has no policy files")
	}
}

// actionInput is the input the governance plane would build for an action
// calling tool, which the task allows, with overrides applied to the tool
// contract fields.
func actionInput(tool map[string]any) map[string]any {
	contract := map[string]any{
		"name":             "search",
		"version":          "1",
		"effect_class":     "EFFECT_CLASS_READ",
		"data_sensitivity": "DATA_SENSITIVITY_INTERNAL",
		"default_approval": "APPROVAL_RULE_POLICY",
		"required_scopes":  []string{},
	}
	for k, v := range tool {
		contract[k] = v
	}
	return map[string]any{
		"task": map[string]any{
			"task_id":        "task-1",
			"status":         "TASK_STATUS_RUNNING",
			"risk_tier":      "RISK_TIER_LOW",
			"allowed_tools":  []any{"search", contract["name"]},
			"authorizer_ref": "user:bo",
			"requester_ref":  "user:ana",
		},
		"tool": contract,
		"action": map[string]any{
			"action_id":    "act-1",
			"tool":         contract["name"],
			"tool_version": "1",
			"target":       "web",
			"params":       map[string]any{"q": "x"},
			"effect_class": contract["effect_class"],
			"proposed_by":  "agent:1",
			"rationale":    map[string]any{"expected_impact": "", "rollback_plan": "", "evidence": []any{}, "alternatives": []any{}},
		},
		"credential": map[string]any{"credential_ref": "", "scopes": []string{}},
		"risk":       map[string]any{"contract_risk_tier": "RISK_TIER_LOW"},
	}
}

func TestEvaluateDefaultBundle(t *testing.T) {
	ctx := context.Background()
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	notAllowed := actionInput(nil)
	notAllowed["task"].(map[string]any)["allowed_tools"] = []any{"other"}
	noTask := actionInput(nil)
	delete(noTask, "task")
	irreversible := actionInput(map[string]any{"name": "payments.send", "effect_class": "EFFECT_CLASS_IRREVERSIBLE"})
	argued := actionInput(map[string]any{"name": "payments.send", "effect_class": "EFFECT_CLASS_IRREVERSIBLE"})
	argued["action"].(map[string]any)["rationale"] = map[string]any{"expected_impact": "pays 120 EUR", "rollback_plan": "ask for a refund", "evidence": []any{}, "alternatives": []any{}}

	tests := []struct {
		name    string
		input   map[string]any
		want    policy.Result // Revision is filled in below
		reasons []string      // substrings, one per reason; nil: want.Reasons exactly
	}{{
		name:  "read is allowed",
		input: actionInput(nil),
		want:  policy.Result{Decision: policy.Allow, RiskTier: "RISK_TIER_LOW", RequiredApproverRoles: []string{}, Reasons: []string{"reads change nothing"}},
	}, {
		name:  "irreversible, argued for, requires one authorizer",
		input: argued,
		want:  policy.Result{Decision: policy.RequireApproval, RiskTier: "RISK_TIER_HIGH", RequiredApproverRoles: []string{"authorizer"}, RequiredApprovals: 1, Reasons: []string{"irreversible actions require approval"}},
	}, {
		name:    "irreversible without the proposer's rationale is denied",
		input:   irreversible,
		want:    policy.Result{Decision: policy.Deny, RiskTier: "RISK_TIER_HIGH", RequiredApproverRoles: []string{}},
		reasons: []string{"need the proposer's expected impact and rollback plan: missing rationale.expected_impact, rationale.rollback_plan"},
	}, {
		name:    "tool not allowed by the task is denied",
		input:   notAllowed,
		want:    policy.Result{Decision: policy.Deny, RiskTier: "RISK_TIER_LOW", RequiredApproverRoles: []string{}},
		reasons: []string{`tool "search" is not allowed by the task contract`},
	}, {
		name:    "no allowed_tools at all is denied",
		input:   noTask,
		want:    policy.Result{Decision: policy.Deny, RiskTier: "RISK_TIER_LOW", RequiredApproverRoles: []string{}},
		reasons: []string{"not allowed by the task contract"},
	}, {
		name:  "restricted data requires approval even to read",
		input: actionInput(map[string]any{"data_sensitivity": "DATA_SENSITIVITY_RESTRICTED"}),
		want:  policy.Result{Decision: policy.RequireApproval, RiskTier: "RISK_TIER_LOW", RequiredApproverRoles: []string{"authorizer"}, RequiredApprovals: 1, Reasons: []string{"tools touching restricted data require approval"}},
	}, {
		name:  "idempotent write is allowed",
		input: actionInput(map[string]any{"name": "notes.put", "effect_class": "EFFECT_CLASS_IDEMPOTENT_WRITE"}),
		want:  policy.Result{Decision: policy.Allow, RiskTier: "RISK_TIER_MEDIUM", RequiredApproverRoles: []string{}, Reasons: []string{"the write is idempotent or can be compensated"}},
	}, {
		name:    "unspecified effect class is denied",
		input:   actionInput(map[string]any{"effect_class": "EFFECT_CLASS_UNSPECIFIED"}),
		want:    policy.Result{Decision: policy.Deny, RiskTier: "RISK_TIER_HIGH", RequiredApproverRoles: []string{}},
		reasons: []string{"EFFECT_CLASS_UNSPECIFIED, which this policy cannot judge"},
	}, {
		name:    "empty input is denied",
		input:   map[string]any{},
		want:    policy.Result{Decision: policy.Deny, RiskTier: "RISK_TIER_HIGH", RequiredApproverRoles: []string{}},
		reasons: []string{"cannot judge", "not allowed by the task contract"}, // sorted
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := engine.Evaluate(ctx, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.Revision = engine.Revision()
			if tt.reasons != nil {
				want.Reasons = got.Reasons
				if len(got.Reasons) != len(tt.reasons) {
					t.Errorf("reasons = %q, want %d matching %q", got.Reasons, len(tt.reasons), tt.reasons)
				}
				for i := range min(len(got.Reasons), len(tt.reasons)) {
					if !strings.Contains(got.Reasons[i], tt.reasons[i]) {
						t.Errorf("reasons[%d] = %q, want it to contain %q", i, got.Reasons[i], tt.reasons[i])
					}
				}
			}
			assertResult(t, got, want)
		})
	}
}

func assertResult(t *testing.T, got, want policy.Result) {
	t.Helper()
	if got.Decision != want.Decision || got.RiskTier != want.RiskTier || got.Revision != want.Revision || got.RequiredApprovals != want.RequiredApprovals ||
		!slices.Equal(got.RequiredApproverRoles, want.RequiredApproverRoles) || !slices.Equal(got.Reasons, want.Reasons) {
		t.Errorf("Evaluate =\n  %+v\nwant\n  %+v", got, want)
	}
}

// writeBundle writes files (relative path → content) under dir. Each file
// is written aside and renamed into place, as deployments update bundles, so
// a concurrent Reload never reads a half-written file.
func writeBundle(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := p + ".tmp" // not .rego, so never part of a bundle
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
}

// loadBundle writes a one-file bundle to a new directory and loads it.
func loadBundle(t *testing.T, rego string) *policy.Engine {
	t.Helper()
	dir := t.TempDir()
	writeBundle(t, dir, map[string]string{"p.rego": rego})
	engine, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return engine
}

const (
	allowAll = `package steward.policy

decision := {"decision": "allow", "risk_tier": "RISK_TIER_LOW", "reasons": ["allow all"]}
`
	denyAll = `package steward.policy

decision := {"decision": "deny", "reasons": ["deny all"]}
`
)

// TestEvaluateFailsClosed: whatever a custom bundle gets wrong, the answer is
// a deny, never an allow and never an error.
func TestEvaluateFailsClosed(t *testing.T) {
	tests := []struct {
		name   string
		rego   string
		input  map[string]any
		reason string
	}{{
		name:   "undefined decision",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"allow\"} if input.trusted\n",
		input:  map[string]any{"trusted": false},
		reason: "undefined",
	}, {
		name:   "no steward.policy package at all",
		rego:   "package other\n\ndecision := {\"decision\": \"allow\"}\n",
		reason: "undefined",
	}, {
		name:   "decision is not an object",
		rego:   "package steward.policy\n\ndecision := \"allow\"\n",
		reason: "string, not an object",
	}, {
		name:   "unknown decision value",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"maybe\"}\n",
		reason: `"maybe", not one of`,
	}, {
		name:   "decision value with the wrong case",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"ALLOW\"}\n",
		reason: "not one of",
	}, {
		name:   "missing decision value",
		rego:   "package steward.policy\n\ndecision := {\"reasons\": [\"fine\"]}\n",
		reason: "not one of",
	}, {
		name:   "roles not a list",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"require_approval\", \"required_approver_roles\": \"authorizer\"}\n",
		reason: "required_approver_roles is string, not a list",
	}, {
		name:   "reason not a string",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"allow\", \"reasons\": [1]}\n",
		reason: "reasons[0] is",
	}, {
		name:   "required approvals not a number",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"require_approval\", \"required_approvals\": \"2\"}\n",
		reason: "required_approvals is string, not a number",
	}, {
		name:   "required approvals not whole",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"require_approval\", \"required_approvals\": 1.5}\n",
		reason: "required_approvals is 1.5, not a whole number from 0 to 5",
	}, {
		name:   "required approvals negative",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"require_approval\", \"required_approvals\": -1}\n",
		reason: "not a whole number from 0 to 5",
	}, {
		name:   "required approvals past the ceiling",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"require_approval\", \"required_approvals\": 6}\n",
		reason: "required_approvals is 6, not a whole number from 0 to 5",
	}, {
		name:   "risk tier not a string",
		rego:   "package steward.policy\n\ndecision := {\"decision\": \"allow\", \"risk_tier\": 3}\n",
		reason: "risk_tier is",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			engine := loadBundle(t, tt.rego)
			got, err := engine.Evaluate(context.Background(), tt.input)
			if err != nil {
				t.Fatalf("Evaluate error = %v, want a deny", err)
			}
			if got.Decision != policy.Deny || len(got.Reasons) != 1 || !strings.Contains(got.Reasons[0], tt.reason) {
				t.Errorf("Evaluate = %+v, want deny with a reason containing %q", got, tt.reason)
			}
			if got.Revision != engine.Revision() {
				t.Errorf("Revision = %q, want %q", got.Revision, engine.Revision())
			}
		})
	}
}

func TestEvaluateRuntimeErrorIsAnError(t *testing.T) {
	// Two values for one complete rule is an eval_conflict_error at run time.
	engine := loadBundle(t, `package steward.policy

decision := {"decision": "allow"} if input.a
decision := {"decision": "deny"} if input.b
`)
	ctx := context.Background()
	if got, err := engine.Evaluate(ctx, map[string]any{"a": true}); err != nil || got.Decision != policy.Allow {
		t.Fatalf("Evaluate(a) = %+v, %v; want allow", got, err)
	}
	got, err := engine.Evaluate(ctx, map[string]any{"a": true, "b": true})
	if err == nil {
		t.Fatalf("Evaluate(a, b) = %+v, want an error", got)
	}
	if !strings.Contains(err.Error(), "conflict") || !strings.Contains(err.Error(), engine.Revision()) {
		t.Errorf("error = %v, want a conflict naming revision %s", err, engine.Revision())
	}
	if got.Decision == policy.Allow {
		t.Errorf("Evaluate returned allow alongside an error")
	}
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "p.rego")
	writeBundle(t, filepath.Dir(file), map[string]string{"p.rego": allowAll})
	onlyTests := t.TempDir()
	writeBundle(t, onlyTests, map[string]string{"p_test.rego": "package steward.policy_test\n\ntest_x if true\n"})
	broken := t.TempDir()
	writeBundle(t, broken, map[string]string{"ok.rego": allowAll, "bad.rego": "package steward.policy\n\ndecision := {\n"})

	for name, tt := range map[string]struct{ dir, want string }{
		"missing dir":     {filepath.Join(t.TempDir(), "nope"), "no such file"},
		"file, not dir":   {file, "not a directory"},
		"empty dir":       {t.TempDir(), "no .rego policy files"},
		"only tests":      {onlyTests, "no .rego policy files"},
		"does not parse":  {broken, "bad.rego"},
		"Rego v0 syntax":  {writeDir(t, "package steward.policy\n\ndecision = {\"decision\": \"allow\"} { true }\n"), "p.rego"},
		"unsafe variable": {writeDir(t, "package steward.policy\n\ndecision := {\"decision\": x} if true\n"), "unsafe"},
	} {
		t.Run(name, func(t *testing.T) {
			engine, err := policy.Load(ctx, tt.dir)
			if err == nil {
				t.Fatalf("Load = %v, want an error", engine.Revision())
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func writeDir(t *testing.T, rego string) string {
	t.Helper()
	dir := t.TempDir()
	writeBundle(t, dir, map[string]string{"p.rego": rego})
	return dir
}

var revisionPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func TestRevision(t *testing.T) {
	ctx := context.Background()
	def, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !revisionPattern.MatchString(def.Revision()) {
		t.Fatalf("default Revision = %q, want sha256:<64 hex>", def.Revision())
	}
	// The embedded bundle is the default/ directory: same files, same revision.
	dir, err := policy.Load(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if dir.Revision() != def.Revision() {
		t.Errorf("Revision of default/ = %s, embedded = %s", dir.Revision(), def.Revision())
	}

	bundle := map[string]string{"a.rego": allowAll, "sub/b.rego": "package steward.helpers\n\nx := 1\n"}
	revisionOf := func(files map[string]string) string {
		t.Helper()
		d := t.TempDir()
		writeBundle(t, d, files)
		e, err := policy.Load(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		return e.Revision()
	}
	base := revisionOf(bundle)
	if again := revisionOf(bundle); again != base {
		t.Errorf("same files in another directory: revision %s, want %s", again, base)
	}
	withTest := map[string]string{"a_test.rego": "package steward.policy_test\n\ntest_x if true\n"}
	for k, v := range bundle {
		withTest[k] = v
	}
	if got := revisionOf(withTest); got != base {
		t.Errorf("adding a _test.rego changed the revision: %s, want %s", got, base)
	}
	if got := revisionOf(map[string]string{"a.rego": allowAll, "sub/c.rego": bundle["sub/b.rego"]}); got == base {
		t.Error("renaming a file did not change the revision")
	}
	if got := revisionOf(map[string]string{"a.rego": allowAll + "\n", "sub/b.rego": bundle["sub/b.rego"]}); got == base {
		t.Error("editing a file did not change the revision")
	}
}

func BenchmarkEvaluate(b *testing.B) {
	ctx := context.Background()
	engine, err := policy.Load(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	input := actionInput(map[string]any{"effect_class": "EFFECT_CLASS_REVERSIBLE_WRITE"})
	b.ReportAllocs()
	for b.Loop() {
		got, err := engine.Evaluate(ctx, input)
		if err != nil {
			b.Fatal(err)
		}
		if got.Decision != policy.Allow {
			b.Fatalf("Decision = %s, want allow", got.Decision)
		}
	}
}

func BenchmarkEvaluateParallel(b *testing.B) {
	ctx := context.Background()
	engine, err := policy.Load(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		input := actionInput(nil)
		for pb.Next() {
			if _, err := engine.Evaluate(ctx, input); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
