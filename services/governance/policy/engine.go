package policy

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Engine evaluates a policy bundle. It is safe for concurrent use:
// Evaluate never blocks on Reload, and sees either the old bundle or the new
// one, never a mix.
type Engine struct {
	current atomic.Pointer[bundle]

	dir    string // "" for the embedded default bundle
	fsys   fs.FS
	origin string // how compile errors name the bundle's files

	reloadMu sync.Mutex // one Reload at a time; Evaluate does not take it
}

// Load compiles every .rego file in dir and its subdirectories, except
// *_test.rego, into an Engine. An empty dir means the default bundle built
// into the binary.
func Load(ctx context.Context, dir string) (*Engine, error) {
	e := &Engine{dir: dir, fsys: defaultBundle, origin: "default"}
	if dir != "" {
		info, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("load policy: %w", err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("load policy: %s is not a directory", dir)
		}
		e.fsys, e.origin = os.DirFS(dir), dir
	}
	src, err := readSource(e.fsys)
	if err != nil {
		return nil, fmt.Errorf("load policy %s: %w", e.origin, err)
	}
	b, err := compile(ctx, src, e.origin)
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	e.current.Store(b)
	return e, nil
}

// Revision returns the revision of the bundle in force, "sha256:<hex>".
func (e *Engine) Revision() string {
	return e.current.Load().revision
}

// Evaluate evaluates data.steward.policy.decision over input. A policy that
// gives no usable decision yields a Deny Result, not an error; an error means
// evaluation itself failed (a Rego runtime error, or ctx ended mid-way), and the
// caller must treat the action as denied for now. Evaluate only reads
// input, so parts of it may be shared by evaluations running at once; input
// made only of JSON's types (nil, bool, string, json.Number, map[string]any,
// []any) goes to OPA without a copy, and a member that is a Part without
// being converted again.
func (e *Engine) Evaluate(ctx context.Context, input map[string]any) (Result, error) {
	b := e.current.Load() // one bundle for the whole evaluation
	return b.decide(ctx, b.query, decisionQuery, inputOption(input))
}

// EvaluateValue is Evaluate over input as OPA's value already: built with
// OPA's ast package (Parts may be anywhere in it) rather than converted
// from Go's values. It only reads input; a value shared by evaluations
// running at once must have had its objects' keys sorted before (as
// NewPart does), since OPA sorts them in place on first use.
func (e *Engine) EvaluateValue(ctx context.Context, input ast.Value) (Result, error) {
	b := e.current.Load()
	return b.decide(ctx, b.query, decisionQuery, rego.EvalParsedInput(input))
}

// decide evaluates query, named name, of b with opts (its input); an
// undefined result is a deny that says so.
func (b *bundle) decide(ctx context.Context, query rego.PreparedEvalQuery, name string, opts ...rego.EvalOption) (Result, error) {
	// Left to itself, OPA starts a goroutine per evaluation to watch ctx,
	// keeps metrics no one reads, and converts the result to Go's values:
	// the cancel is set from ctx without a goroutine, the metrics are
	// OPA's no-op, and the result is read as OPA's value (decisionOf).
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	opts = append(opts, rego.EvalExternalCancel(cancel), rego.EvalMetrics(metrics.NoOp()), rego.EvalGenerateJSON(asIs))
	rs, err := query.Eval(ctx, opts...)
	var r Result
	if err == nil && len(rs) > 0 && len(rs[0].Expressions) > 0 {
		if r, err = decisionOf(rs[0].Expressions[0].Value, b.revision, name); err == nil {
			return b.withSources(r), nil
		}
	}
	if err != nil {
		what := map[string]string{planQuery: "plan policy", revisionQuery: "revision policy"}[name]
		if what == "" {
			what = "policy"
		}
		return Result{}, fmt.Errorf("evaluate %s %s: %w", what, b.revision, err)
	}
	return b.withSources(denyResult(b.revision, "policy gave no decision: "+name+" is undefined")), nil
}

// NoPlanRule is the reason of the allow EvaluatePlan gives under a bundle
// with no plan rule.
const NoPlanRule = "the policy bundle has no plan rule (data.steward.plan.decision): each step is judged on its own when it runs"

// EvaluatePlan evaluates data.steward.plan.decision over input, the
// document describing one plan version (docs/plans.md, "Plan policy").
// A bundle with no module in package steward.plan allows every plan, with
// the reason NoPlanRule: a plan runs nothing but actions, and each of
// them is still evaluated by the action query before it may run, so a
// bundle written before plans existed keeps governing what they do. A
// bundle that has the package but gives no usable decision for input is
// read as a deny, as for actions.
func (e *Engine) EvaluatePlan(ctx context.Context, input map[string]any) (Result, error) {
	b := e.current.Load()
	if !b.hasPlanRule {
		return b.withSources(Result{Decision: Allow, Reasons: []string{NoPlanRule}, Revision: b.revision}), nil
	}
	return b.decide(ctx, b.planQuery, planQuery, inputOption(input))
}

// Reload re-reads the bundle's directory. If its revision differs from the
// bundle in force and it compiles, Reload swaps it in and returns true. If
// it cannot be read or does not compile, the bundle in force stays and Reload
// returns the error. For the embedded default bundle Reload does nothing.
func (e *Engine) Reload(ctx context.Context) (bool, error) {
	if e.dir == "" {
		return false, nil
	}
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	src, err := readSource(e.fsys)
	if err != nil {
		return false, fmt.Errorf("reload policy %s: %w", e.origin, err)
	}
	if src.revision == e.current.Load().revision {
		return false, nil
	}
	b, err := compile(ctx, src, e.origin)
	if err != nil {
		return false, fmt.Errorf("reload policy: %w", err)
	}
	e.current.Store(b)
	return true, nil
}

// Watch calls Reload every interval until ctx ends, logging each new
// revision and each new reload error with logger (slog.Default if nil). A
// failure that repeats is logged once, not on every tick.
func (e *Engine) Watch(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	if logger == nil {
		logger = slog.Default()
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		changed, err := e.Reload(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if err.Error() != lastErr {
				logger.Error("policy reload failed; keeping the bundle in force",
					"dir", e.dir, "revision", e.Revision(), "err", err)
			}
			lastErr = err.Error()
		case changed:
			logger.Info("policy reloaded", "dir", e.dir, "revision", e.Revision())
			lastErr = ""
		default:
			if lastErr != "" {
				// The broken files were put back as they were.
				logger.Info("policy reload recovered", "dir", e.dir, "revision", e.Revision())
				lastErr = ""
			}
		}
	}
}
