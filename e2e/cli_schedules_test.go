package e2e_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestCLISchedules starts a schedule from a YAML file with `steward
// schedules create` as an agent, finds it with get and list (tables and
// one Schedule a line), pauses, resumes and deletes it; a stranger may not
// steer it, a bad template is refused naming its field, and a file that is
// not a request is a usage error (docs/cli.md).
func TestCLISchedules(t *testing.T) {
	h := startSteward(t, setup{})
	agent := newPerson(t, h.url, agentToken)
	dir := t.TempDir()
	file := writeFile(t, dir, "news.yaml", `requestId: competitor-news
spec:
  cron: "30 2 * * *"
  timeZone: America/New_York
template:
  contract:
    intent: Collect yesterday's competitor news
    desiredOutcome: A one-page summary
    requesterRef: user:ana
    accountableOwnerRef: user:ana
    riskTier: RISK_TIER_LOW
    budget: {maxTokens: "400"}
  runsBudget: {maxTokens: "1000"}
overlap: {policy: OVERLAP_POLICY_QUEUE, queueLimit: 2}
catchUp: {rule: CATCH_UP_RULE_LAST}
`)
	out, _ := agent.run(0, "schedules", "create", file, "-o", "json")
	s := &stewardv1.Schedule{}
	if err := protojson.Unmarshal([]byte(out), s); err != nil || s.ScheduleId == "" || s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE {
		t.Fatalf("schedules create -o json printed %q (%v)", out, err)
	}
	if next := s.NextFiringTime.AsTime(); next.Minute() != 30 || next.Second() != 0 {
		t.Errorf("the next firing %s is not at :30", next)
	}
	if out, _ := agent.run(0, "schedules", "create", file); !strings.Contains(out, s.ScheduleId) || !strings.Contains(out, "made already") {
		t.Errorf("the same request again printed %q", out)
	}
	if out, _ := agent.run(0, "schedules", "get", s.ScheduleId); !strings.Contains(out, "cron 30 2 * * * America/New_York") || !strings.Contains(out, "overlap:") ||
		!strings.Contains(out, "runs budget: 0 of 1000 tokens") {
		t.Errorf("schedules get printed:\n%s", out)
	}
	if out, _ := agent.run(0, "schedules", "list"); !strings.HasPrefix(out, "SCHEDULE ") || !strings.Contains(out, s.ScheduleId) {
		t.Errorf("schedules list printed:\n%s", out)
	}
	stranger := newPerson(t, h.url, ownerToken)
	if _, errOut := stranger.run(4, "schedules", "pause", s.ScheduleId); !strings.Contains(errOut, "permission_denied") {
		t.Errorf("a stranger's pause said %q", errOut)
	}
	for _, step := range []struct{ verb, status string }{{"pause", "paused"}, {"resume", "active"}, {"delete", "deleted"}} {
		if out, _ := agent.run(0, "schedules", step.verb, s.ScheduleId, "--reason", "testing"); out != "schedule "+s.ScheduleId+" is "+step.status+"\n" {
			t.Errorf("schedules %s printed %q", step.verb, out)
		}
	}
	bad := writeFile(t, dir, "bad.yaml", "spec: {interval: 60s}\ntemplate: {contract: {desiredOutcome: x}}\n")
	if _, errOut := agent.run(4, "schedules", "create", bad); !strings.Contains(errOut, "template.contract.intent") {
		t.Errorf("a template without an intent said %q", errOut)
	}
	typo := writeFile(t, dir, "typo.yaml", "spec: {cron: '* * * * *'}\ntemplat: {}\n")
	agent.run(2, "schedules", "create", typo)
}
