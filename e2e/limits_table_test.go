package e2e_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/a2a"
	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/governance/policy"
	"github.com/steward-run/steward/services/state"
)

// TestLimitsTableMatchesTheCode reads the limits table in docs/errors.md
// and checks each row against the constants the code enforces, so that a
// limit changed in one place is changed in the other.
func TestLimitsTableMatchesTheCode(t *testing.T) {
	data, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	q := control.DefaultQuotas
	want := map[string][]string{
		"a request": {size(rpc.MaxRequestBytes), fmt.Sprintf("at most %d messages deep", rpc.MaxMessageDepth)},
		"text fields (intent, desired outcome, descriptions)": {size(control.MaxTextLen)},
		"an acceptance criterion": {size(control.MaxCriterionBytes), fmt.Sprintf("%d levels", control.MaxCriterionNesting),
			count(control.MaxCriterionNodes, "nodes"), fmt.Sprintf("%d comprehensions", control.MaxCriterionComprehensions),
			fmt.Sprintf("%d ms to evaluate", control.MaxCriterionTime.Milliseconds()), human(control.MaxCriteriaTime) + " for all"},
		"a tool's `parametersSchema` or `resultSchema`": {size(action.MaxSchemaBytes), fmt.Sprintf("%d levels", action.MaxSchemaDepth),
			count(action.MaxSchemaKeys, "object keys"), fmt.Sprintf("%d `$ref`s", action.MaxSchemaRefChain), count(action.MaxSchemaExpansion, "subschemas")},
		"a tool's `params` and results": {size(control.MaxParams), fmt.Sprintf("%d levels", action.MaxValueDepth), count(action.MaxValidationSteps, "steps"),
			fmt.Sprintf("exponent of at most %d", action.MaxNumberExponent)},
		"a regular expression (a schema's `pattern` or `patternProperties` key, a value of format `regex`, a criterion's `matches`)": {
			size(action.MaxPatternBytes), count(action.MaxPatternInsts, "instructions")},
		"an HTTP connection": {"headers within " + human(rpc.DefaultReadHeaderTimeout), "request within " + human(rpc.DefaultReadTimeout),
			"after " + human(rpc.DefaultIdleTimeout) + " idle", fmt.Sprintf("%d concurrent calls", rpc.DefaultMaxConcurrentStreams)},
		"task ids (`task_id`, `parent_task_id`)":                            {fmt.Sprintf("1–%d", limits.MaxTaskID)},
		"request ids (`request_id`, `proposal_id`)":                         {size(limits.MaxRequestID)},
		"every other id, ref, hash, name, version, page token, service key": {size(limits.MaxID)},
		"a principal (`Steward-Principal`, or a token file's `principal`)":  {size(rpc.MaxPrincipalLen)},
		"reasons": {size(control.MaxReasonLen)},
		"a proposal's `rationale`": {"`rollbackPlan` " + size(control.MaxTextLen) + " each", fmt.Sprintf("%d `evidence`", control.MaxRationaleEvidence),
			fmt.Sprintf("%d `alternatives`", control.MaxRationaleAlternatives), "entries of " + size(control.MaxRationaleEntryLen) + " each"},
		"a policy's `required_approvals`":                                   {fmt.Sprintf("0–%d", policy.MaxRequiredApprovals)},
		"every list or map, at any depth":                                   {fmt.Sprintf("%d entries", limits.MaxList)},
		"a value quoted back in an error":                                   {size(errs.MaxEcho)},
		"`contract.timers.approval_remind_after`, `approval_suspend_after`": {span(control.MinApprovalTimer, control.MaxApprovalTimer)},
		"`contract.timers.stall_after`":                                     {span(control.MinStallAfter, control.MaxStallAfter)},
		"a tool's `timeout`":                                                {span(toolreg.MinTimeout, toolreg.MaxTimeout)},
		"`retryPolicy.initialBackoff`, `maxBackoff` (tool or proposal)":     {span(toolreg.MinRetryBackoff, toolreg.MaxRetryBackoff)},
		"`retryPolicy.maxElapsed`":                                          {span(toolreg.MinRetryElapsed, toolreg.MaxRetryElapsed)},
		"`idempotency.retention`":                                           {span(toolreg.MinRetention, toolreg.MaxRetention)},
		"a tool's `limits.maxConcurrent`":                                   {count(toolreg.MaxConcurrentCalls, "calls in flight")},
		"a tool's `limits.ratePerSecond`, `burst`":                          {"one call an hour – " + count(toolreg.MaxRatePerSecond, "calls a second"), "bursts of " + count(toolreg.MaxBurst, "calls")},
		"a tool's `limits.breakerMinRequests`, `breakerFailureRate`":        {count(toolreg.MaxBreakerMinRequests, "outcomes")},
		"a tool's `limits.breakerCoolDown`":                                 {span(toolreg.MinBreakerCoolDown, toolreg.MaxBreakerCoolDown)},
		"`--credential-ttl`":                                                {span(credential.MinTTL, credential.MaxTTL)},
		"`contract.recoveryPolicy.maxAttempts`":                             {fmt.Sprintf("%d proposals", control.MaxRecoveryAttempts), fmt.Sprintf("0: %d", control.DefaultRecoveryAttempts)},
		"content read back (`GetResult`, `GetArtifactContent`)": {size(action.MaxResult) + " of a result", size(state.MaxArtifactContent) + " of an artifact",
			"chunks of " + size(state.ArtifactChunkBytes)},
		"quotas, per principal / per tenant ([quotas.md](quotas.md))": {
			"running tasks " + number(q.RunningTasksPerPrincipal) + " / " + number(q.RunningTasksPerTenant),
			"plan bytes " + size(int(q.PlanBytesPerPrincipal)) + " / " + size(int(q.PlanBytesPerTenant)),
			"stored content " + size(int(q.ContentBytesPerPrincipal)) + " / " + size(int(q.ContentBytesPerTenant))},
		"an answer (every RPC)": {size(rpc.MaxResponseBytes) + " encoded"},
		"a page (`ListTasks`, `ListApprovals`, `ListDeadLetters`)": {size(rpc.MaxPageBytes) + " of items", "on top of `page_size`"},
		"`ListTasks`'s filters ([performance.md](performance.md#listing-tasks))": {fmt.Sprintf("`text` %d characters", state.MaxFilterText),
			"`owner` and `tool` " + size(state.MaxFilterRef), count(state.MaxScan, "of the tenant's tasks")},
		"responses in flight on one connection":  {size(rpc.DefaultConnResponseBytes)},
		"responses in flight on all connections": {size(rpc.DefaultServerResponseBytes)},
		"server streams one caller holds open":   {count(rpc.DefaultStreamsPerCaller, "streams")},
		"an A2A request, an artifact inline in an A2A answer ([a2a.md](a2a.md))": {size(a2a.MaxRequestBytes) + " of JSON-RPC request",
			size(a2a.MaxInlineArtifactBytes) + " of an artifact's content", size(a2a.MaxInlineAnswerBytes) + " of all the artifacts' content one answer or event carries"},
	}
	if d := time.Duration(float64(time.Second) / toolreg.MinRatePerSecond); d.Round(time.Second) != time.Hour {
		t.Errorf("docs/errors.md says a tool's rate is at least one call an hour; the code says one every %s", d)
	}
	rows := map[string]string{}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "| what | limit |":
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			rows[strings.TrimSpace(cells[0])] = strings.TrimSpace(cells[len(cells)-1])
		default:
			in = false
		}
	}
	for what, limit := range rows {
		words, ok := want[what]
		if !ok {
			t.Errorf("docs/errors.md limits the row %q, which this test does not know: add it with the constants it documents", what)
			continue
		}
		for _, w := range words {
			if !strings.Contains(limit, w) {
				t.Errorf("docs/errors.md says %q is limited to %q; the code says %q", what, limit, w)
			}
		}
	}
	for what := range want {
		if _, ok := rows[what]; !ok {
			t.Errorf("the limit %q is not in docs/errors.md", what)
		}
	}
}

// size writes n bytes as the docs do: "1 GiB", "1 MiB", "4 KiB", "128 bytes".
func size(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// number writes n as the docs do: "10,000".
func number(n int64) string { return strings.TrimSuffix(count(int(n), ""), " ") }

// count writes n things as the docs do: "4,096 object keys".
func count(n int, things string) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " " + things
}

// span writes a range as the docs do: "1 minute – 1 year".
func span(lo, hi time.Duration) string { return human(lo) + " – " + human(hi) }

// human writes d in its largest whole unit; a day only from two on, as
// the docs say "24 hours".
func human(d time.Duration) string {
	const day, year = 24 * time.Hour, 365 * 24 * time.Hour
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{year, "year"}, {day, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d < u.d || d%u.d != 0 || (u.d == day && d < 2*day) {
			continue
		}
		if n := int(d / u.d); n != 1 {
			return fmt.Sprintf("%d %ss", n, u.name)
		}
		return "1 " + u.name
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}
