package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/a2a"
)

// An A2A skills file checked where its author works, as --a2a-skills
// reads it at start: no Steward is called (docs/a2a.md).

func (c *cli) a2aCommand() *cobra.Command {
	return c.group("a2a", "check an A2A skills file here: the skills the agent card lists and the contract each opens tasks with",
		c.local("check FILE", "read FILE as --a2a-skills does and list its skills; exit 1 if it is refused", []string{"FILE"}, func(_ context.Context, args []string) error {
			skills, err := a2a.LoadSkills(args[0])
			if err != nil {
				return err
			}
			if c.json() {
				return c.skillLines(skills)
			}
			rows := make([][]string, 0, len(skills))
			for _, s := range skills {
				k := s.Contract
				rows = append(rows, []string{s.ID, s.Name, s.Agent, strings.ToLower(strings.TrimPrefix(k.RiskTier.String(), "RISK_TIER_")),
					strconv.FormatInt(k.GetBudget().GetMaxTokens(), 10), strings.Join(k.AllowedTools, ","), strconv.Itoa(len(k.AcceptanceCriteria)),
					ownerOr(k.AccountableOwnerRef)})
			}
			return c.table([]string{"SKILL", "NAME", "AGENT", "RISK", "MAX TOKENS", "TOOLS", "CRITERIA", "OWNER"}, rows)
		}))
}

// ownerOr is an owner as the table shows it: an empty one is the caller's.
func ownerOr(ref string) string {
	if ref == "" {
		return "(the caller)"
	}
	return ref
}

// skillLines prints each skill as one JSON object, its contract in the
// API's JSON.
func (c *cli) skillLines(skills []a2a.Skill) error {
	for _, s := range skills {
		contract, err := protojson.Marshal(s.Contract)
		if err != nil {
			return err
		}
		line, err := json.Marshal(map[string]any{"id": s.ID, "name": s.Name, "agent": s.Agent, "contract": json.RawMessage(contract)})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(c.stdout, "%s\n", line); err != nil {
			return err
		}
	}
	return nil
}
