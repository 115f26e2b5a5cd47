package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// Rollouts (docs/rollouts.md): ramp a tool version up, watch it, roll it
// back.

func (c *cli) rolloutsCommand() *cobra.Command {
	return c.group("rollouts", "ramp a new tool version up over new tasks, and roll it back",
		c.rolloutsStart(), c.rolloutsGet(), c.rolloutsList(), c.rolloutsRollback())
}

func (c *cli) rolloutsStart() *cobra.Command {
	spec := &stewardv1.RolloutSpec{}
	var steps string
	cmd := c.verb("start", "start ramping --version of --tool up from --stable, step by step", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		spec.Steps = nil
		for _, f := range strings.Split(steps, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 32)
			if err != nil {
				return usagef("--steps %q: want shares in percent, such as 10,50,100", steps)
			}
			spec.Steps = append(spec.Steps, uint32(n))
		}
		r, err := s.StartRollout(ctx, spec)
		if err != nil {
			return fmt.Errorf("start rollout: %w", err)
		}
		if c.json() {
			return c.message(r)
		}
		_, err = fmt.Fprintf(c.stdout, "rollout %s ramps %s@%s over %s@%s at %d%%\n", r.RolloutId, r.Spec.Tool, r.Spec.CandidateVersion, r.Spec.Tool, r.Spec.StableVersion, r.Share)
		return err
	})
	f := cmd.Flags()
	f.StringVar(&spec.Tool, "tool", "", "the tool (required)")
	f.StringVar(&spec.CandidateVersion, "version", "", "the version ramped up (required)")
	f.StringVar(&spec.StableVersion, "stable", "", "the version it replaces, and the one a rollback returns to (required)")
	f.StringVar(&steps, "steps", "10,50,100", "shares of new tasks in percent, increasing, the last 100")
	f.Uint32Var(&spec.MinTasks, "min-tasks", 10, "candidate tasks that must end during a step before it is judged")
	f.Float64Var(&spec.MaxFailureRate, "max-failure-rate", 0.1, "roll back when more of a step's ended candidate tasks fail (0 to 1)")
	f.Float64Var(&spec.MinAcceptedRate, "min-accepted-rate", 0, "roll back when fewer of a step's ended candidate tasks are accepted (0 to 1)")
	return cmd
}

func (c *cli) rolloutsGet() *cobra.Command {
	return c.verb("get ROLLOUT", "show a rollout: its state, step and the step's figures", []string{"ROLLOUT"}, func(ctx context.Context, s *steward.Client, args []string) error {
		r, err := s.GetRollout(ctx, args[0])
		if err != nil {
			return fmt.Errorf("rollout %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(r)
		}
		fig := r.GetFigures()
		fields(c.stdout, "rollout", r.RolloutId, "state", word(r.State, "ROLLOUT_STATE_"), "tool", r.Spec.Tool,
			"candidate", r.Spec.CandidateVersion, "stable", r.Spec.StableVersion, "step", stepOf(r),
			"ended", fmt.Sprintf("%d (failed %d, accepted %d; judged at %d)", fig.GetEnded(), fig.GetFailed(), fig.GetAccepted(), r.Spec.MinTasks),
			"reason", r.Reason, "started by", r.StartedBy, "started", when(r.StartTime), "ended at", when(r.EndTime))
		return nil
	})
}

// stepOf says where r is among its steps, e.g. "2 of 3 (50%)".
func stepOf(r *stewardv1.Rollout) string {
	return fmt.Sprintf("%d of %d (%d%%)", r.Step+1, len(r.GetSpec().GetSteps()), r.Share)
}

func (c *cli) rolloutsList() *cobra.Command {
	return c.verb("list", "list your tenant's rollouts, newest first", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		rs, err := s.ListRollouts(ctx)
		if err != nil {
			return fmt.Errorf("list rollouts: %w", err)
		}
		if c.json() {
			return messages(c, rs)
		}
		rows := make([][]string, 0, len(rs))
		for _, r := range rs {
			rows = append(rows, []string{r.RolloutId, word(r.State, "ROLLOUT_STATE_"), r.Spec.Tool, r.Spec.CandidateVersion, r.Spec.StableVersion, stepOf(r), short(r.Reason, 50)})
		}
		return c.table([]string{"ROLLOUT", "STATE", "TOOL", "CANDIDATE", "STABLE", "STEP", "REASON"}, rows)
	})
}

func (c *cli) rolloutsRollback() *cobra.Command {
	var reason string
	cmd := c.verb("rollback ROLLOUT", "roll a ramping rollout back: every task takes the stable version from its next call", []string{"ROLLOUT"},
		func(ctx context.Context, s *steward.Client, args []string) error {
			r, err := s.RollBackRollout(ctx, args[0], reason)
			if err != nil {
				return fmt.Errorf("roll back %s: %w", args[0], err)
			}
			if c.json() {
				return c.message(r)
			}
			_, err = fmt.Fprintf(c.stdout, "rollout %s is %s\n", r.RolloutId, word(r.State, "ROLLOUT_STATE_"))
			return err
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why (required)")
	return cmd
}
