package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/version"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// OPAVersion is the version of OPA this binary evaluates with.
func OPAVersion() string { return version.Version }

// Restore compiles a revision from the sources governance kept of it, as
// an auditor does offline (steward audit verify --bundle): the files must
// hash to the revision they name, and have been evaluated under this
// binary's OPA version, or the re-evaluation would not be the one that
// decided. The engine never reloads.
func Restore(ctx context.Context, src *stewardv1.PolicySources) (*Engine, error) {
	s := source{files: map[string][]byte{}}
	names := make([]string, 0, len(src.GetFiles()))
	for i, f := range src.GetFiles() {
		if f.Path == "" || path.Clean(f.Path) != f.Path || (i > 0 && f.Path <= names[i-1]) {
			return nil, fmt.Errorf("file %d: path %q is not a clean relative path, in order", i, f.Path)
		}
		s.files[f.Path] = f.Content
		names = append(names, f.Path)
	}
	if s.revision = revisionOf(s.files, names); s.revision != src.GetRevision() {
		return nil, fmt.Errorf("its files hash to revision %s, not %s", s.revision, src.GetRevision())
	}
	if src.GetOpaVersion() != version.Version {
		return nil, fmt.Errorf("it was evaluated under OPA %q; this steward has OPA %s: verify with a steward of that OPA version", src.GetOpaVersion(), version.Version)
	}
	b, err := compile(ctx, s, "policy")
	if err != nil {
		return nil, err
	}
	e := &Engine{}
	e.current.Store(b)
	return e, nil
}

// EvaluateAt evaluates a recorded canonical input (JSON) with OPA's clock
// fixed to at, the evaluation's recorded time: the action query, or with
// plan the plan query.
func (e *Engine) EvaluateAt(ctx context.Context, input []byte, at time.Time, plan bool) (Result, error) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber() // numbers as governance hands them to OPA
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return Result{}, fmt.Errorf("input: %w", err)
	}
	b := e.current.Load()
	query, name := b.query, decisionQuery
	if plan {
		if !b.hasPlanRule {
			return b.withSources(Result{Decision: Allow, Reasons: []string{NoPlanRule}, Revision: b.revision}), nil
		}
		query, name = b.planQuery, planQuery
	}
	return b.decide(ctx, query, name, inputOption(doc), rego.EvalTime(at))
}
