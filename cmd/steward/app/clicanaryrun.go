package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/canary"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance/policy"
)

// A canary run starts a Steward of its own, here, runs the definition's
// samples through it and judges them (pkg/canary, docs/canary.md).

type canaryRunFlags struct {
	def, against, baseline string
	update                 bool
	timeout                time.Duration
}

func (c *cli) canaryCommand() *cobra.Command {
	return c.group("canary", "run sample tasks against a candidate policy bundle, tool version or model", c.canaryRun())
}

func (c *cli) canaryRun() *cobra.Command {
	var f canaryRunFlags
	cmd := c.local("run --def FILE", "run the sample tasks of FILE in a Steward of its own; exit 0 all pass, 1 a sample failed, 3 error", nil, func(ctx context.Context, _ []string) error {
		rep, err := c.runCanaryDef(ctx, f)
		if err != nil {
			return err
		}
		if err := c.canaryRunReport(rep); err != nil {
			return err
		}
		if !rep.Pass {
			return &failure{code: canary.ExitFail, err: fmt.Errorf("canary %s failed: %s", rep.Definition, failedSamples(rep))}
		}
		return nil
	})
	cmd.Annotations = map[string]string{canaryErrorAnnotation: fmt.Sprint(canary.ExitError)}
	fl := cmd.Flags()
	fl.StringVar(&f.def, "def", "", "`FILE` of the canary definition (docs/canary.md); required")
	fl.StringVar(&f.against, "against", "", "the candidate: policy=DIR (a bundle), tool=FILE (a tool contract replacing the one of its name) or model=ID (the model decisions record); none: today's versions")
	fl.StringVar(&f.baseline, "baseline", "", "`FILE` of the last accepted run (default: FILE of --def with .baseline.json for .json)")
	fl.BoolVar(&f.update, "update-baseline", false, "write the baseline from this run, if every sample passed")
	fl.DurationVar(&f.timeout, "sample-timeout", 2*time.Minute, "how long one sample may run before it is judged not accepted")
	return cmd
}

// candidate is what --against names.
type candidate struct {
	policyDir string
	tool      *stewardv1.ToolContract
	model     string
}

func parseAgainst(against string) (candidate, error) {
	var cand candidate
	if against == "" {
		return cand, nil
	}
	kind, value, ok := strings.Cut(against, "=")
	if !ok || value == "" {
		return cand, usagef("--against %q: want policy=DIR, tool=FILE or model=ID", against)
	}
	switch kind {
	case "policy":
		cand.policyDir = value
	case "model":
		cand.model = value
	case "tool":
		data, err := os.ReadFile(value)
		if err != nil {
			return cand, fmt.Errorf("--against tool: %w", err)
		}
		cand.tool = &stewardv1.ToolContract{}
		if err := protojson.Unmarshal(data, cand.tool); err != nil {
			return cand, fmt.Errorf("--against tool: %s: %w", value, err)
		}
	default:
		return cand, usagef("--against %q: want policy=DIR, tool=FILE or model=ID", against)
	}
	return cand, nil
}

// runCanaryDef loads what the flags name, starts the canary's Steward,
// runs the samples and, if asked and earned, writes the baseline.
func (c *cli) runCanaryDef(ctx context.Context, f canaryRunFlags) (*canary.Report, error) {
	if f.def == "" {
		return nil, usagef("--def is required: the FILE of the canary definition")
	}
	if f.timeout <= 0 {
		return nil, usagef("--sample-timeout must be positive")
	}
	d, err := canary.Load(f.def)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.def, err)
	}
	cand, err := parseAgainst(f.against)
	if err != nil {
		return nil, err
	}
	bundle := cmpOr(cand.policyDir, d.Policy)
	if bundle != "" {
		// The bundle compiles, or no Steward starts.
		if _, err := policy.Load(ctx, bundle); err != nil {
			return nil, err
		}
	}
	if f.baseline == "" {
		f.baseline = strings.TrimSuffix(f.def, ".json") + ".baseline.json"
	}
	base, err := canary.LoadBaseline(f.baseline, d.Name)
	if err != nil {
		return nil, err
	}
	rep, err := runCanarySamples(ctx, c.stderr, d, cand, base, f)
	if err != nil {
		return nil, err
	}
	if f.update && rep.Pass {
		if err := canary.WriteBaseline(f.baseline, rep.Baseline(time.Now())); err != nil {
			return nil, fmt.Errorf("--baseline: %w", err)
		}
		rep.BaselineWritten = true
	}
	return rep, nil
}

func runCanarySamples(ctx context.Context, stderr io.Writer, d *canary.Definition, cand candidate, base *canary.Baseline, f canaryRunFlags) (*canary.Report, error) {
	stubs, err := canary.ServeStubs(d)
	if err != nil {
		return nil, err
	}
	defer stubs.Close()
	tools, err := d.Endpoints(stubs, cand.tool)
	if err != nil {
		return nil, fmt.Errorf("--against: %w", err)
	}
	ctx, stop := interruptible(ctx)
	defer stop()
	s, err := startCanarySteward(ctx, stderr, cmpOr(cand.policyDir, d.Policy), tools, d.Approvers())
	if err != nil {
		return nil, err
	}
	defer s.close()
	agent, err := s.client(canary.Agent)
	if err != nil {
		return nil, err
	}
	r := &canary.Runner{Agent: agent, As: s.client, Model: cand.model, CandidateTool: cand.tool.GetName(), Timeout: f.timeout, Now: time.Now}
	rep, err := r.RunAll(ctx, d, base, cmpOr(f.against, "current"))
	if err != nil {
		return nil, err
	}
	rep.StubCalls = stubs.Calls()
	return rep, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func failedSamples(rep *canary.Report) string {
	var names []string
	for _, v := range rep.Verdicts {
		if !v.Pass {
			names = append(names, v.Sample)
		}
	}
	return strings.Join(names, ", ")
}

// canaryRunReport prints the report: one JSON object, or a line per
// sample in words and a table of the runs.
func (c *cli) canaryRunReport(rep *canary.Report) error {
	if c.json() {
		out, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "%s\n", out)
		return err
	}
	verdict := "passed"
	if !rep.Pass {
		verdict = "FAILED"
	}
	fmt.Fprintf(c.stdout, "canary %s against %s: %s (%d samples in %s)\n", rep.Definition, rep.Against, verdict, len(rep.Verdicts), time.Duration(rep.Millis)*time.Millisecond)
	for _, v := range rep.Verdicts {
		fmt.Fprintln(c.stdout, v.Sentence())
	}
	table(c.stdout, "SAMPLE\tKIND\tSTATUS\tEXPECTED\tACTIONS\tCOST µ\tTIME\tBASELINE\tRESULT", func(w io.Writer) {
		for _, v := range rep.Verdicts {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%dms\t%s\t%s\n", v.Sample, v.Kind, v.Run.Status, v.Expected, len(v.Run.Actions),
				v.Run.CostMicros, v.Run.Millis, baselineWord(v), passWord(v.Pass))
		}
	})
	if len(rep.StubCalls) > 0 {
		fmt.Fprintf(c.stdout, "\nstub calls: %s\n", stubCounts(rep.StubCalls))
	}
	if rep.BaselineWritten {
		fmt.Fprintln(c.stdout, "baseline written")
	}
	return nil
}

func baselineWord(v canary.Verdict) string {
	if v.NoBaseline {
		return "no baseline"
	}
	n := 0
	for _, d := range v.Differences {
		if d.Fails {
			n++
		}
	}
	return fmt.Sprintf("%d changed, %d failing", len(v.Differences), n)
}

func passWord(pass bool) string {
	if pass {
		return "pass"
	}
	return "FAIL"
}

// stubCounts says how many calls each stub got, in the order of the first.
func stubCounts(calls []canary.Call) string {
	var order []string
	n := map[string]int{}
	for _, c := range calls {
		if n[c.Tool] == 0 {
			order = append(order, c.Tool)
		}
		n[c.Tool]++
	}
	parts := make([]string, len(order))
	for i, tool := range order {
		parts[i] = fmt.Sprintf("%s %d", tool, n[tool])
	}
	return strings.Join(parts, ", ")
}
