package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policycanary"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// canaryProposal is one action of the canary's scenario: the tier of its
// task's contract and its tool.
type canaryProposal struct {
	tier       stewardv1.RiskTier
	tool       string
	snapshotID string
}

// canaryBundle writes the default bundle, edited by edit, to a directory
// of its own under dir.
func canaryBundle(t *testing.T, dir, name string, edit func(string) string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	for _, file := range []string{"steward.rego", "plan.rego"} {
		src, err := os.ReadFile(filepath.Join("..", "services", "governance", "policy", "default", file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		if file == "steward.rego" {
			text = edit(text)
		}
		writeFile(t, out, file, text)
	}
	return out
}

// irreversibleRule is the default bundle's rule that a loosening edits.
const irreversibleRule = `approval_reasons contains "irreversible actions require approval" if {
	effect_class == "EFFECT_CLASS_IRREVERSIBLE"
}`

// TestPolicyCanary is issue 35's scenario, through the real binary: 100
// actions over three tools (a read, an idempotent write, an irreversible
// call) in tasks of three risk tiers, each evaluated by the governance
// plane (real OPA, embedded JetStream) under the default bundle. `steward
// policy canary` re-evaluates their recorded inputs: a stricter bundle
// (search denied, two approvers at high risk) reports exactly the
// snapshots the scenario says it tightens, and exits 2; a looser one
// (irreversible calls allowed in low-risk tasks) exactly those it
// loosens, exit 1; the bundle in force none, exit 0; a bundle that does
// not compile exits 3 naming its file, as does a caller without the
// auditor or operator role. No task gains an event.
func TestPolicyCanary(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	same := canaryBundle(t, dir, "policy", func(s string) string { return s })
	tools := fmt.Sprintf(`{"tools": [
	  {"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}},
	  {"name": "write", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}},
	  {"name": "wire", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}}
	]}`, tool.URL+"/search", tool.URL+"/write", tool.URL+"/wire")
	tokens := fmt.Sprintf(`{"tokens": [
	  {"token": %q, "principal": "agent:lead", "roles": []},
	  {"token": %q, "principal": "user:audrey", "roles": ["auditor"]}
	]}`, agentToken, auditorToken)
	p := startBinary(t, filepath.Join(dir, "data"), "--policy-dir", same, "--tools", writeFile(t, dir, "tools.json", tools),
		"--auth", writeFile(t, dir, "tokens.json", tokens))
	agent := withToken(p.url, agentToken)
	ctx := context.Background()

	tiers := []stewardv1.RiskTier{stewardv1.RiskTier_RISK_TIER_LOW, stewardv1.RiskTier_RISK_TIER_MEDIUM, stewardv1.RiskTier_RISK_TIER_HIGH}
	var taskIDs []string
	for _, tier := range tiers {
		k := contract()
		k.RiskTier, k.AllowedTools, k.AuthorizerRef = tier, []string{"search", "write", "wire"}, "user:bo"
		resp, err := agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "canary-" + tier.String(), Contract: k}))
		if err != nil {
			t.Fatal(err)
		}
		taskIDs = append(taskIDs, resp.Msg.Task.Contract.TaskId)
		waitStatus(t, agent.clients, taskIDs[len(taskIDs)-1], stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	}
	toolNames := []string{"search", "write", "wire"}
	byAction := map[string]*canaryProposal{}
	for i := range 100 {
		task, name := i%3, toolNames[(i/3)%3]
		a := propose(t, agent, taskIDs[task], fmt.Sprintf("canary-%d", i), name, map[string]any{"q": fmt.Sprint(i)})
		byAction[a.ActionId] = &canaryProposal{tier: tiers[task], tool: name}
	}
	// Every action evaluated, and come to rest: run, or waiting for a person.
	for _, id := range taskIDs {
		waitServed(t, agent.clients, id, 60*time.Second, func(tk *stewardv1.Task) (bool, string) {
			for _, a := range tk.Actions {
				if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED && a.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
					return false, fmt.Sprintf("action %s is %v", a.ActionId, a.Status)
				}
				byAction[a.ActionId].snapshotID = a.Snapshot.GetSnapshotId()
			}
			return true, ""
		})
	}
	expect := func(changed func(canaryProposal) bool) []string {
		var ids []string
		for _, pr := range byAction {
			if changed(*pr) {
				ids = append(ids, pr.snapshotID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	before := lastSequences(t, agent.clients, taskIDs)

	canary := func(want int, bundle string, extra ...string) (*policycanary.Report, string) {
		t.Helper()
		args := append([]string{"policy", "canary", "--bundle", bundle, "--addr", p.url, "--token", auditorToken, "-o", "json"}, extra...)
		start := time.Now()
		out, errs := runBinary(t, nil, want, args...)
		t.Logf("canary of %s: %v", filepath.Base(bundle), time.Since(start))
		var r policycanary.Report
		if want != policycanary.ExitError {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("canary -o json: %v\n%s", err, out)
			}
		}
		return &r, errs
	}
	changedIDs := func(r *policycanary.Report, d policycanary.Direction) []string {
		var ids []string
		for _, c := range r.Changes {
			if c.Direction == d {
				ids = append(ids, c.SnapshotID)
			}
		}
		slices.Sort(ids)
		return ids
	}

	r, _ := canary(policycanary.ExitUnchanged, same)
	if r.Snapshots != 100 || r.Reevaluated != 100 || len(r.Changes) != 0 {
		t.Errorf("the bundle in force: %d read, %d re-evaluated, changes %v; want 100, 100, none", r.Snapshots, r.Reevaluated, r.Changes)
	}

	stricter := canaryBundle(t, dir, "stricter", func(s string) string {
		return s + "\ndeny_reasons contains \"search is retired\" if tool_name == \"search\"\n\napprovals_needed contains 2 if contract_risk_tier == \"RISK_TIER_HIGH\"\n"
	})
	r, _ = canary(policycanary.ExitTightened, stricter)
	want := expect(func(pr canaryProposal) bool {
		return pr.tool == "search" || (pr.tier == stewardv1.RiskTier_RISK_TIER_HIGH && pr.tool != "search")
	})
	if got := changedIDs(r, policycanary.Tightened); !slices.Equal(got, want) || r.Count(policycanary.Loosened) != 0 {
		t.Errorf("stricter: tightened %d %v, loosened %d; want %d %v", len(got), got, r.Count(policycanary.Loosened), len(want), want)
	}
	checkGroup(t, r, policycanary.Group{Direction: policycanary.Tightened, Tool: "search", Transition: "allow → deny", Reason: "search is retired"}, 34)
	checkGroup(t, r, policycanary.Group{Direction: policycanary.Tightened, Tool: "wire",
		Transition: "require_approval (1 of authorizer) → require_approval (2 of authorizer)", Reason: "irreversible actions require approval"}, 11)

	looser := canaryBundle(t, dir, "looser", func(s string) string {
		if !strings.Contains(s, irreversibleRule) {
			t.Fatal("the default bundle no longer has the irreversible rule this test edits")
		}
		return strings.Replace(s, irreversibleRule, strings.Replace(irreversibleRule, "\n}", "\n\tcontract_risk_tier != \"RISK_TIER_LOW\"\n}", 1), 1) +
			"\nallow_reasons contains \"low-risk tasks may wire\" if {\n\teffect_class == \"EFFECT_CLASS_IRREVERSIBLE\"\n\tcontract_risk_tier == \"RISK_TIER_LOW\"\n}\n"
	})
	r, _ = canary(policycanary.ExitLoosened, looser)
	want = expect(func(pr canaryProposal) bool { return pr.tool == "wire" && pr.tier == stewardv1.RiskTier_RISK_TIER_LOW })
	if got := changedIDs(r, policycanary.Loosened); !slices.Equal(got, want) || r.Count(policycanary.Tightened) != 0 {
		t.Errorf("looser: loosened %d %v, tightened %d; want %d %v", len(got), got, r.Count(policycanary.Tightened), len(want), want)
	}

	out, _ := runBinary(t, nil, policycanary.ExitLoosened, "policy", "canary", "--bundle", looser, "--addr", p.url, "--token", auditorToken)
	if !strings.Contains(out, fmt.Sprintf("100 re-evaluated: %d loosened, 0 tightened", len(want))) ||
		!regexp.MustCompile(`loosened +11 +wire +require_approval \(1 of authorizer\) → allow +irreversible actions require approval`).MatchString(out) {
		t.Errorf("the looser bundle's report for people:\n%s", out)
	}

	r, _ = canary(policycanary.ExitUnchanged, stricter, "--since", time.Now().Add(time.Hour).Format(time.RFC3339))
	if r.Snapshots != 0 {
		t.Errorf("--since an hour ahead read %d snapshots", r.Snapshots)
	}
	broken := filepath.Join(dir, "broken")
	writeFile(t, broken, "steward.rego", "package steward.policy\n\ndecision := {\n")
	if _, errs := canary(policycanary.ExitError, broken); !strings.Contains(errs, filepath.Join(broken, "steward.rego")) {
		t.Errorf("a bundle that does not compile: stderr does not name its file: %q", errs)
	}
	if _, errs := runBinary(t, nil, policycanary.ExitError, "policy", "canary", "--bundle", same, "--addr", p.url, "--token", agentToken); !strings.Contains(errs, "permission_denied") {
		t.Errorf("an agent's canary: %q, want permission_denied", errs)
	}
	if _, errs := runBinary(t, nil, policycanary.ExitError, "policy", "canary", "--addr", p.url); !strings.Contains(errs, "--bundle is required") {
		t.Errorf("a canary without --bundle: %q", errs)
	}
	if after := lastSequences(t, agent.clients, taskIDs); !maps.Equal(before, after) {
		t.Errorf("the canaries changed the log: last sequences %v, then %v", before, after)
	}
}

// checkGroup checks r counts n changes in group g.
func checkGroup(t *testing.T, r *policycanary.Report, g policycanary.Group, n int) {
	t.Helper()
	g.Count = n
	if !slices.Contains(r.Groups, g) {
		t.Errorf("no group %+v in %+v", g, r.Groups)
	}
}

// lastSequences are the tasks' last stream sequences, as served.
func lastSequences(t *testing.T, c clients, taskIDs []string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, id := range taskIDs {
		out[id] = getTask(t, c, id).LastSequence
	}
	return out
}
