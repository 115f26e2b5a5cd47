package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance/policy"
)

// A policy bundle checked where its author works: its Rego tests, and
// the decision it gives one input, by the engine the governance plane
// runs. No Steward is called.

func (c *cli) policyCommand() *cobra.Command {
	return c.group("policy", "check a policy bundle here: run its tests, judge one input, re-evaluate past decisions under it", c.policyTest(), c.policyEval(), c.policyCanary())
}

// testLine is a Rego test's result as `policy test -o json` prints it.
type testLine struct {
	Name       string  `json:"name"`
	File       string  `json:"file"`
	Line       int     `json:"line"`
	Outcome    string  `json:"outcome"`
	Error      string  `json:"error,omitempty"`
	DurationMs float64 `json:"durationMs"`
}

func (c *cli) policyTest() *cobra.Command {
	return c.local("test DIR", "run the Rego tests (test_ rules) of the policy bundle in DIR; exit 1 if one does not pass", []string{"DIR"}, func(ctx context.Context, args []string) error {
		results, err := policy.RunTests(ctx, args[0])
		if err != nil {
			return err
		}
		var failed []string
		for _, r := range results {
			if r.Outcome != policy.TestPass {
				failed = append(failed, r.Name)
			}
			if err := c.testResult(r); err != nil {
				return err
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("%d of %d policy tests did not pass: %s", len(failed), len(results), strings.Join(failed, ", "))
		}
		if !c.json() {
			_, err = fmt.Fprintf(c.stdout, "%d policy tests passed\n", len(results))
		}
		return err
	})
}

// testResult prints one test: a line for people (with where a failing
// one is), or one JSON object.
func (c *cli) testResult(r policy.TestResult) error {
	if c.json() {
		line, err := json.Marshal(testLine{Name: r.Name, File: r.File, Line: r.Line, Outcome: r.Outcome, Error: r.Error,
			DurationMs: float64(r.Duration) / float64(time.Millisecond)})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", line)
		return err
	}
	where := ""
	if r.Outcome != policy.TestPass {
		where = strings.TrimSpace(fmt.Sprintf("  %s:%d %s", r.File, r.Line, r.Error))
		where = "  " + where
	}
	_, err := fmt.Fprintf(c.stdout, "%-5s %s (%s)%s\n", strings.ToUpper(r.Outcome), r.Name, r.Duration.Round(time.Microsecond), where)
	return err
}

func (c *cli) policyEval() *cobra.Command {
	var input string
	var plan bool
	cmd := c.local("eval DIR --input FILE", "judge one policy input (JSON, as governance builds it) with the bundle in DIR", []string{"DIR"}, func(ctx context.Context, args []string) error {
		if input == "" {
			return usagef("--input is required: a FILE of the policy input, as JSON")
		}
		doc, err := readInput(input)
		if err != nil {
			return err
		}
		e, err := policy.Load(ctx, args[0])
		if err != nil {
			return err
		}
		judge := e.Evaluate
		if plan {
			judge = e.EvaluatePlan
		}
		res, err := judge(ctx, doc)
		if err != nil {
			return err
		}
		return c.decision(res)
	})
	cmd.Flags().StringVar(&input, "input", "", "`FILE` of one policy input, as JSON (docs/tour.md, Policy); required")
	cmd.Flags().BoolVar(&plan, "plan", false, "judge a plan (data.steward.plan.decision) rather than an action")
	return cmd
}

// readInput reads a policy input, its numbers kept as written.
func readInput(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, usagef("%s is not a policy input (a JSON object): %v", path, err)
	}
	return doc, nil
}

// decision prints what the bundle decided: name: value lines, or a
// PolicySnapshot (its decision, tier, roles, reasons and revision).
func (c *cli) decision(res policy.Result) error {
	snap := &stewardv1.PolicySnapshot{
		BundleRevision:        res.Revision,
		Decision:              stewardv1.PolicyDecision(stewardv1.PolicyDecision_value["POLICY_DECISION_"+strings.ToUpper(res.Decision)]),
		RiskTier:              stewardv1.RiskTier(stewardv1.RiskTier_value[res.RiskTier]),
		RequiredApproverRoles: res.RequiredApproverRoles,
		RequiredApprovals:     res.RequiredApprovals,
		Reasons:               res.Reasons,
	}
	if c.json() {
		return c.message(snap)
	}
	approvals := ""
	if res.Decision == policy.RequireApproval {
		approvals = fmt.Sprint(max(res.RequiredApprovals, 1))
	}
	pairs := []string{"decision", res.Decision, "risk tier", word(snap.RiskTier, "RISK_TIER_"),
		"roles", strings.Join(res.RequiredApproverRoles, ", "), "approvals", approvals}
	for _, r := range res.Reasons {
		pairs = append(pairs, "reason", r)
	}
	fields(c.stdout, append(pairs, "revision", res.Revision)...)
	return nil
}
