package e2e_test

import (
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestCLITasksFilters: `steward tasks ls` with --owner, --risk, --tool and
// --text lists, through the real binary, the tasks each filter matches
// and no other, and a bad filter is refused naming its field.
func TestCLITasksFilters(t *testing.T) {
	h := startSteward(t, setup{})
	ops := newPerson(t, h.url, operatorToken)
	plain := h.create(t, "cli-ls-plain", contract())
	k := contract()
	k.Intent = "Wire the Quarterly refund"
	k.AccountableOwnerRef = "user:bo"
	k.RiskTier = stewardv1.RiskTier_RISK_TIER_MEDIUM
	k.AllowedTools = []string{"search", "wire"}
	wire := h.create(t, "cli-ls-wire", k)

	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{plain, wire}},
		{[]string{"--owner", "user:bo"}, []string{wire}},
		{[]string{"--owner", "user:ana"}, []string{plain}},
		{[]string{"--risk", "medium,high"}, []string{wire}},
		{[]string{"--tool", "wire"}, []string{wire}},
		{[]string{"--tool", "search"}, []string{plain, wire}},
		{[]string{"--text", "QUARTERLY"}, []string{wire}},
		{[]string{"--text", wire[len(wire)-6:]}, []string{wire}},
		{[]string{"--text", "incidents", "--risk", "low", "--owner", "user:ana", "--tool", "search"}, []string{plain}},
		{[]string{"--text", "incidents", "--owner", "user:bo"}, nil},
	} {
		out, _ := ops.run(0, append([]string{"tasks", "ls", "--limit", "0"}, c.args...)...)
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			got = append(got, strings.Fields(line)[0])
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("tasks ls %v lists %v, want %v:\n%s", c.args, got, c.want, out)
		}
	}
	if _, stderr := ops.run(2, "tasks", "ls", "--risk", "huge"); !strings.Contains(stderr, "--risk") {
		t.Errorf("tasks ls --risk huge: %q", stderr)
	}
	if _, stderr := ops.run(4, "tasks", "ls", "--tool", "wire@1.0.0"); !strings.Contains(stderr, "invalid_argument") || !strings.Contains(stderr, "tool") {
		t.Errorf("tasks ls --tool wire@1.0.0: %q", stderr)
	}
}
