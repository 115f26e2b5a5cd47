package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/policycanary"
	"github.com/steward-run/steward/pkg/terminal"
	"github.com/steward-run/steward/services/governance/policy"
)

// A policy canary re-evaluates the inputs of past decisions under a
// candidate bundle, here: the server streams what it recorded and never
// loads the candidate, which is compiled by governance's own loader.

// canaryErrorAnnotation marks a command whose every error, a usage one
// too, exits with the code it names: a pipeline gating on the canary's
// 1 and 2 must not read a mistyped flag as a change.
const canaryErrorAnnotation = "steward.exit-on-error"

type canaryFlags struct {
	bundle, since, until, tenant string
	limit                        uint32
}

func (c *cli) policyCanary() *cobra.Command {
	var f canaryFlags
	cmd := c.local("canary --bundle DIR", "re-evaluate past decisions under the bundle in DIR; exit 0 unchanged, 1 loosened, 2 tightened only, 3 error", nil, func(ctx context.Context, _ []string) error {
		if f.bundle == "" {
			return usagef("--bundle is required: the DIR of the candidate policy bundle")
		}
		req, err := f.request()
		if err != nil {
			return err
		}
		// The candidate compiles, or nothing is asked of Steward.
		e, err := policy.Load(ctx, f.bundle)
		if err != nil {
			return err
		}
		client, err := c.auditClient()
		if err != nil {
			return err
		}
		report, err := runCanary(ctx, client, req, e)
		if err != nil {
			return err
		}
		if err := c.canaryReport(report); err != nil {
			return err
		}
		if code := report.ExitCode(); code != policycanary.ExitUnchanged {
			return &failure{code: code, err: canaryVerdict(report)}
		}
		return nil
	})
	cmd.Annotations = map[string]string{canaryErrorAnnotation: fmt.Sprint(policycanary.ExitError)}
	c.connectionFlags(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&f.bundle, "bundle", "", "`DIR` of the candidate policy bundle (every .rego file in it and below); required")
	fl.StringVar(&f.since, "since", "", "only decisions made at or after this RFC 3339 `TIME`")
	fl.StringVar(&f.until, "until", "", "only decisions made before this RFC 3339 `TIME`")
	fl.StringVar(&f.tenant, "tenant", "", "the `TENANT` whose decisions: yours (the token's), which is the default")
	fl.Uint32Var(&f.limit, "limit", 0, "at most `N` decisions, the oldest tasks' first (0: all)")
	return cmd
}

// request is the ListPolicySnapshots request the flags ask for.
func (f canaryFlags) request() (*stewardv1.ListPolicySnapshotsRequest, error) {
	req := &stewardv1.ListPolicySnapshotsRequest{Tenant: f.tenant, Limit: f.limit}
	for _, t := range []struct {
		name, value string
		set         **timestamppb.Timestamp
	}{{"--since", f.since, &req.Since}, {"--until", f.until, &req.Until}} {
		if t.value == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, t.value)
		if err != nil {
			return nil, usagef("%s: %q is not an RFC 3339 time", t.name, t.value)
		}
		*t.set = timestamppb.New(at)
	}
	return req, nil
}

// auditClient is a client of the AuditService, which the SDK does not
// wrap, found and authenticated as the other commands are.
func (c *cli) auditClient() (stewardv1connect.AuditServiceClient, error) {
	base, hc, err := c.dialHTTP()
	if err != nil {
		return nil, err
	}
	return stewardv1connect.NewAuditServiceClient(hc, base), nil
}

// runCanary re-evaluates under e every snapshot the request streams.
func runCanary(ctx context.Context, client stewardv1connect.AuditServiceClient, req *stewardv1.ListPolicySnapshotsRequest, e *policy.Engine) (*policycanary.Report, error) {
	canary := policycanary.New(engineEvaluator(e), e.Revision())
	stream, err := client.ListPolicySnapshots(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	for stream.Receive() {
		canary.Add(ctx, stream.Msg().Snapshot)
	}
	if err := stream.Err(); err != nil {
		return nil, fmt.Errorf("policy snapshots: %w", err)
	}
	return canary.Report(), nil
}

// canaryVerdict is what the exit code means, said on stderr.
func canaryVerdict(r *policycanary.Report) error {
	if len(r.Errors) > 0 {
		return fmt.Errorf("%d of the decisions could not be re-evaluated under %s: %s", len(r.Errors), r.Candidate, r.Errors[0])
	}
	if r.Reevaluated == 0 {
		return fmt.Errorf("none of the %d decisions read could be re-evaluated (their inputs were not kept): the canary checked nothing", r.Snapshots)
	}
	return fmt.Errorf("%d decisions loosened, %d tightened under %s", r.Count(policycanary.Loosened), r.Count(policycanary.Tightened), r.Candidate)
}

// canaryReport prints the report: one JSON object, or the counts, the
// groups and each changed snapshot.
func (c *cli) canaryReport(r *policycanary.Report) error {
	if c.json() {
		out, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", out)
		return err
	}
	fmt.Fprintf(c.stdout, "candidate %s: %d decisions read, %d re-evaluated: %d loosened, %d tightened\n",
		r.Candidate, r.Snapshots, r.Reevaluated, r.Count(policycanary.Loosened), r.Count(policycanary.Tightened))
	whys := make([]string, 0, len(r.NotReevaluable))
	for why := range r.NotReevaluable {
		whys = append(whys, why)
	}
	sort.Strings(whys)
	for _, why := range whys {
		fmt.Fprintf(c.stdout, "not re-evaluable: %d: %s\n", r.NotReevaluable[why], why)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(c.stdout, "error: %s\n", e)
	}
	if len(r.Groups) > 0 {
		table(c.stdout, "WAY\tCOUNT\tTOOL\tCHANGE\tREASON", func(w io.Writer) {
			for _, g := range r.Groups {
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", g.Direction, g.Count, terminal.EscapeLine(g.Tool), g.Transition, terminal.EscapeLine(g.Reason))
			}
		})
	}
	if len(r.Changes) > 0 {
		table(c.stdout, "WAY\tTASK\tACTION\tTOOL\tSNAPSHOT\tCHANGE", func(w io.Writer) {
			for _, ch := range r.Changes {
				what := ch.ActionID
				if what == "" {
					what = fmt.Sprintf("plan v%d", ch.PlanVersion)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", ch.Direction, ch.TaskID, what, terminal.EscapeLine(ch.Tool), ch.SnapshotID, ch.Transition())
			}
		})
	}
	return nil
}

// table writes a blank line, header and the rows rows writes, aligned.
func table(w io.Writer, header string, rows func(io.Writer)) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "\n%s\n", header)
	rows(tw)
	_ = tw.Flush()
}

// errorCode is the exit code of cmd's error err when cmd chose its own
// (canaryErrorAnnotation), and a failure err already carries stays.
func errorCode(cmd *cobra.Command, err error) (int, bool) {
	var fail *failure
	if errors.As(err, &fail) {
		return fail.code, true
	}
	code, err2 := strconv.Atoi(cmd.Annotations[canaryErrorAnnotation])
	return code, err2 == nil
}
