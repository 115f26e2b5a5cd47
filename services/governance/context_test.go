package governance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance/policy"
)

// pinnedInputsBundle is the example bundle that reads a task's context
// refs and inputs.
const pinnedInputsBundle = "policy/examples/pinned_inputs"

// TestPolicyReadsContextAndInputs shows that a policy can judge an action
// by what its task was given: the example bundle's Rego tests pass, and
// the bundle, evaluated over the input governance builds from a real
// contract, denies a write when an input is not pinned by digest, asks a
// person for context from outside the knowledge base, and allows the rest.
func TestPolicyReadsContextAndInputs(t *testing.T) {
	ctx := context.Background()
	modules, store, err := tester.LoadWithRegoVersion([]string{pinnedInputsBundle}, nil, ast.RegoV1)
	if err != nil {
		t.Fatal(err)
	}
	results, err := tester.NewRunner().SetStore(store).SetDefaultRegoVersion(ast.RegoV1).SetTimeout(30*time.Second).Run(ctx, modules)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for r := range results {
		ran++
		if r.Error != nil || r.Fail || r.Skip {
			t.Errorf("%s.%s: failed (%v)", r.Package, r.Name, r.Error)
		}
	}
	if ran == 0 {
		t.Fatal("no Rego tests ran")
	}

	engine, err := policy.Load(ctx, pinnedInputsBundle)
	if err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("0f", 32)
	pinned := &stewardv1.ContextRef{Uri: "postgres://warehouse/incidents", Version: "2026-11-30", Digest: digest}
	kb := &stewardv1.ContextRef{Uri: "s3://kb/runbooks/oncall.md", Version: "v12"}
	for _, tt := range []struct {
		name    string
		inputs  []*stewardv1.ContextRef
		context []*stewardv1.ContextRef
		want    string
		reason  string
	}{
		{"pinned inputs, context from the knowledge base", []*stewardv1.ContextRef{pinned}, []*stewardv1.ContextRef{kb}, policy.Allow, "every input is pinned"},
		{"an input without a digest", []*stewardv1.ContextRef{pinned, {Uri: "s3://exports/today.csv"}}, nil, policy.Deny, "input s3://exports/today.csv is not pinned by a digest"},
		{"context from elsewhere", nil, []*stewardv1.ContextRef{kb, {Uri: "https://wiki.example/oncall"}}, policy.RequireApproval, "context https://wiki.example/oncall is not from the knowledge base"},
		{"no context, no inputs", nil, nil, policy.Allow, "every input is pinned"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tk, tool, a, request := benchAction(t)
			tk.Contract.ContextRefs = tt.context
			if tt.inputs != nil {
				tk.Contract.InputSnapshot = &stewardv1.InputSnapshot{Version: "inputs-7", Inputs: tt.inputs}
			}
			facts, err := newToolFacts("", tool)
			if err != nil {
				t.Fatal(err)
			}
			input, rec, err := inputOf(tk, facts, a, request)
			if err != nil {
				t.Fatal(err)
			}
			got, err := engine.EvaluateValue(ctx, input)
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision != tt.want || len(got.Reasons) != 1 || !strings.Contains(got.Reasons[0], tt.reason) {
				t.Errorf("decision %s %q, want %s saying %q", got.Decision, got.Reasons, tt.want, tt.reason)
			}
			// The refs are facts like any other: another digest is another
			// input, and so another input hash on the snapshot.
			if len(tt.inputs) > 0 {
				other := proto.CloneOf(tk)
				other.Contract.InputSnapshot.Inputs[0].Digest = "sha256:" + strings.Repeat("1e", 32)
				_, otherRec, err := inputOf(other, facts, a, request)
				if err != nil {
					t.Fatal(err)
				}
				if otherRec.hash == rec.hash {
					t.Errorf("the input hash does not cover the inputs' digests")
				}
			}
		})
	}
}
