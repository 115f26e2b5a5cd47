package app

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
)

// Schedules (docs/schedules.md): see them, start them from a file, and
// steer them.

func (c *cli) schedulesCommand() *cobra.Command {
	return c.group("schedules", "see, start and steer schedules: tasks made again and again from one template",
		c.schedulesCreate(), c.schedulesGet(), c.schedulesList(),
		c.scheduleSteer("pause", "stop a schedule firing until it is resumed", (*steward.Client).PauseSchedule),
		c.scheduleSteer("resume", "let a paused schedule fire again, from now (what it missed while paused does not run)", (*steward.Client).ResumeSchedule),
		c.scheduleSteer("delete", "end a schedule for good (its runs go on)", (*steward.Client).DeleteSchedule),
		c.schedulesRevoke())
}

func (c *cli) schedulesRevoke() *cobra.Command {
	var reason string
	cmd := c.verb("revoke SCHEDULE", "revoke the credential a schedule acts under: it makes no run again, and its runs may not act further", []string{"SCHEDULE"},
		func(ctx context.Context, s *steward.Client, args []string) error {
			cs, err := s.RevokeScheduleCredential(ctx, args[0], reason)
			if err != nil {
				return fmt.Errorf("revoke %s: %w", args[0], err)
			}
			if c.json() {
				return c.message(cs)
			}
			_, err = fmt.Fprintf(c.stdout, "credential %s of schedule %s is revoked\n", cs.GetCredential().GetCredentialId(), args[0])
			return err
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why, on the revocation and in every refusal it causes (required)")
	return cmd
}

func (c *cli) schedulesCreate() *cobra.Command {
	return c.verb("create FILE", "start a schedule from FILE, a CreateScheduleRequest in JSON or YAML (spec, template, overlap, catchUp, requestId)", []string{"FILE"},
		func(ctx context.Context, s *steward.Client, args []string) error {
			req, err := scheduleRequest(args[0])
			if err != nil {
				return err
			}
			sc, created, err := s.CreateSchedule(ctx, req)
			if err != nil {
				return fmt.Errorf("create schedule: %w", err)
			}
			if c.json() {
				return c.message(sc)
			}
			again := ""
			if !created {
				again = " (made already by this request id)"
			}
			_, err = fmt.Fprintf(c.stdout, "schedule %s is %s%s; next firing %s\n", sc.ScheduleId, scheduleStatus(sc), again, when(sc.NextFiringTime))
			return err
		})
}

// scheduleRequest reads a CreateScheduleRequest from a JSON or YAML file;
// unknown fields are refused, so that a typo is an error rather than
// another schedule.
func scheduleRequest(path string) (*stewardv1.CreateScheduleRequest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, usagef("%s is neither JSON nor YAML: %v", path, err)
	}
	req := &stewardv1.CreateScheduleRequest{}
	if err := protojson.Unmarshal(js, req); err != nil {
		return nil, usagef("%s is not a schedule request: %v", path, err)
	}
	return req, nil
}

func (c *cli) schedulesGet() *cobra.Command {
	return c.verb("get SCHEDULE", "show a schedule, its recent firings and their runs", []string{"SCHEDULE"}, func(ctx context.Context, s *steward.Client, args []string) error {
		sc, err := s.GetSchedule(ctx, args[0])
		if err != nil {
			return fmt.Errorf("schedule %s: %w", args[0], err)
		}
		if c.json() {
			return c.message(sc)
		}
		fields(c.stdout, "schedule", sc.ScheduleId, "status", scheduleStatus(sc), "when", scheduleWhen(sc.Spec),
			"overlap", word(sc.GetOverlap().GetPolicy(), "OVERLAP_POLICY_"), "catch up", word(sc.GetCatchUp().GetRule(), "CATCH_UP_RULE_"),
			"intent", sc.GetTemplate().GetContract().GetIntent(), "creator", sc.Creator, "created", when(sc.CreatedAt),
			"next firing", when(sc.NextFiringTime), "runs", strconv.FormatUint(sc.RunsStarted, 10), "runs budget", runsBudget(sc), "last run", sc.LastTaskId,
			"runs ended", runsEnded(sc), "last run end", lastRunEnd(sc),
			"credential", scheduleCredential(sc.Credential))
		rows := make([][]string, 0, len(sc.RecentFirings))
		for _, f := range sc.RecentFirings {
			what := f.Reason
			if f.MissedCount > 0 {
				what = fmt.Sprintf("%d missed from %s", f.MissedCount, when(f.MissedFrom))
			}
			rows = append(rows, []string{when(f.FiringTime), word(f.Disposition, "FIRING_DISPOSITION_"), f.TaskId, word(f.RunOutcome, "RUN_OUTCOME_"), short(what, 60)})
		}
		if len(rows) == 0 {
			return nil
		}
		fmt.Fprintln(c.stdout)
		return c.table([]string{"FIRING", "DISPOSITION", "RUN", "RUN ENDED", "WHY"}, rows)
	})
}

func (c *cli) schedulesList() *cobra.Command {
	return c.verb("list", "list your tenant's schedules", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		var all []*stewardv1.Schedule
		req := &stewardv1.ListSchedulesRequest{PageSize: 1000}
		for {
			page, err := s.ListSchedules(ctx, req)
			if err != nil {
				return fmt.Errorf("list schedules: %w", err)
			}
			all = append(all, page.Schedules...)
			if page.NextPageToken == "" {
				break
			}
			req.PageToken = page.NextPageToken
		}
		if c.json() {
			return messages(c, all)
		}
		rows := make([][]string, 0, len(all))
		for _, sc := range all {
			rows = append(rows, []string{sc.ScheduleId, scheduleStatus(sc), scheduleWhen(sc.Spec), when(sc.NextFiringTime),
				strconv.FormatUint(sc.RunsStarted, 10), short(sc.GetTemplate().GetContract().GetIntent(), 40)})
		}
		return c.table([]string{"SCHEDULE", "STATUS", "WHEN", "NEXT", "RUNS", "INTENT"}, rows)
	})
}

func (c *cli) scheduleSteer(name, short string, send func(*steward.Client, context.Context, string, string) (*stewardv1.Schedule, error)) *cobra.Command {
	var reason string
	cmd := c.verb(name+" SCHEDULE", short, []string{"SCHEDULE"}, func(ctx context.Context, s *steward.Client, args []string) error {
		sc, err := send(s, ctx, args[0], reason)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, args[0], err)
		}
		if c.json() {
			return c.message(sc)
		}
		_, err = fmt.Fprintf(c.stdout, "schedule %s is %s\n", sc.ScheduleId, scheduleStatus(sc))
		return err
	})
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the schedule's record")
	return cmd
}

func scheduleStatus(sc *stewardv1.Schedule) string { return word(sc.Status, "SCHEDULE_STATUS_") }

// scheduleWhen is a spec in a few words: "cron 30 2 * * * America/New_York".
func scheduleWhen(spec *stewardv1.ScheduleSpec) string {
	zone := spec.GetTimeZone()
	if zone == "" {
		zone = "UTC"
	}
	if spec.GetInterval() != nil {
		return "every " + spec.GetInterval().AsDuration().String()
	}
	return "cron " + spec.GetCron() + " " + zone
}

// scheduleCredential is a schedule's credential in a few words: "cred-…
// until 2026-05-02T09:00:00Z", or who revoked it and why.
func scheduleCredential(cs *stewardv1.CredentialState) string {
	switch {
	case cs == nil:
		return "none yet"
	case cs.Revoked:
		return fmt.Sprintf("%s revoked by %s: %s", cs.Credential.GetCredentialId(), cs.RevokedBy, cs.RevokedReason)
	}
	return cs.Credential.GetCredentialId() + " until " + when(cs.Credential.GetExpiresAt())
}
