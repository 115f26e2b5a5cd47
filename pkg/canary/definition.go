package canary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Sample kinds.
const (
	KindNormal          = "normal"
	KindEdge            = "edge"
	KindExpectedFailure = "expected_failure"
)

// Limits of a definition: a canary is a small fixed set of samples, each
// bounded, not a load test.
const (
	MaxSamples = 50
	MaxSteps   = 50
	// MaxCapCostMicros bounds the per-sample budget cap (100 units of
	// currency): a cap that is no bound is refused.
	MaxCapCostMicros = 100_000_000
	MaxCapTokens     = 10_000_000
)

// Definition is a canary definition file (docs/canary.md).
type Definition struct {
	Name string `json:"name"`
	// Policy is the bundle directory in force today; empty: the built-in
	// default. Relative to the definition file.
	Policy     string     `json:"policy,omitempty"`
	BudgetCap  BudgetCap  `json:"budget_cap"`
	Tolerances Tolerances `json:"tolerances,omitzero"`
	Tools      []Tool     `json:"tools"`
	Samples    []Sample   `json:"samples"`

	// contracts are the tools' parsed contracts, in order.
	contracts []*stewardv1.ToolContract
}

// BudgetCap bounds every sample's contract budget.
type BudgetCap struct {
	MaxTokens     int64 `json:"max_tokens"`
	MaxCostMicros int64 `json:"max_cost_micros"`
	// Currency of the cost (ISO 4217); default USD.
	Currency string `json:"currency,omitempty"`
}

// Tolerances are how far cost and time may drift from the baseline before
// a sample fails; zero reports the drift and never fails on it.
type Tolerances struct {
	MaxCostRatio float64 `json:"max_cost_ratio,omitempty"`
	MaxTimeRatio float64 `json:"max_time_ratio,omitempty"`
}

// Tool is one tool: its contract, with no endpoint, and the target the
// canary calls instead: a staging URL or a stub served by the command.
type Tool struct {
	Contract json.RawMessage `json:"contract"`
	Staging  string          `json:"staging,omitempty"`
	Stub     *Stub           `json:"stub,omitempty"`
}

// Stub is a canned answer: the HTTP status (default 200) and JSON body.
type Stub struct {
	Status int             `json:"status,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// Sample is one sample task.
type Sample struct {
	Name     string          `json:"name"`
	Kind     string          `json:"kind"`
	Contract json.RawMessage `json:"contract"`
	// Input is a JSON object; a step parameter "$input.KEY" is its KEY.
	Input json.RawMessage `json:"input,omitempty"`
	Plan  json.RawMessage `json:"plan,omitempty"`
	// ApproveAs approves what a plan waits for, as this principal.
	ApproveAs string `json:"approve_as,omitempty"`
	Steps     []Step `json:"steps,omitempty"`
	Expect    Expect `json:"expect"`

	contract *stewardv1.TaskContract
	plan     *stewardv1.Plan
	input    map[string]any
}

// Step is one scripted agent step: exactly one of its parts.
type Step struct {
	Propose *Propose `json:"propose,omitempty"`
	Decide  *Decide  `json:"decide,omitempty"`
	Produce *Produce `json:"produce,omitempty"`
}

// Propose proposes an action; ApproveAs approves it if it waits.
type Propose struct {
	Tool      string         `json:"tool"`
	Target    string         `json:"target,omitempty"`
	Params    map[string]any `json:"params,omitempty"`
	ApproveAs string         `json:"approve_as,omitempty"`
	// Rationale is what the proposer says the change does and how it is
	// undone, which policy asks of a risky write.
	Rationale *Rationale `json:"rationale,omitempty"`
}

// Rationale is a proposal's expected impact and rollback plan.
type Rationale struct {
	ExpectedImpact string `json:"expected_impact"`
	RollbackPlan   string `json:"rollback_plan"`
}

// Decide records a model decision.
type Decide struct {
	Model      string `json:"model"`
	TokensIn   int64  `json:"tokens_in,omitempty"`
	TokensOut  int64  `json:"tokens_out,omitempty"`
	CostMicros int64  `json:"cost_micros,omitempty"`
}

// Produce hands in artifacts and marks the task produced.
type Produce struct {
	Artifacts []Artifact `json:"artifacts"`
}

// Artifact is one artifact: JSON content, or text for a text/* type.
type Artifact struct {
	Name      string          `json:"name"`
	MediaType string          `json:"media_type,omitempty"`
	Content   json.RawMessage `json:"content"`
}

// Expect is what a sample should end as: accepted, or not accepted with
// a reason that contains Reason.
type Expect struct {
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
}

// FieldError is a definition refused, naming the field path.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldf(path, format string, args ...any) error {
	return &FieldError{Path: path, Err: fmt.Errorf(format, args...)}
}

// Load reads and validates the definition in file; a relative Policy is
// made relative to the file's directory.
func Load(file string) (*Definition, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	d, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if d.Policy != "" && !filepath.IsAbs(d.Policy) {
		d.Policy = filepath.Join(filepath.Dir(file), d.Policy)
	}
	return d, nil
}

// Parse decodes a definition strictly (an unknown field is refused by its
// path) and validates it.
func Parse(data []byte) (*Definition, error) {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := unknownFields(raw, definitionType, ""); err != nil {
		return nil, err
	}
	var d Definition
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&d); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fieldf(te.Field, "is %s, want %s", te.Value, te.Type)
		}
		return nil, err
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

func (d *Definition) validate() error {
	if !nameRE.MatchString(d.Name) {
		return fieldf("name", "%q is not a name (lowercase letters, digits, . _ -; at most 63)", d.Name)
	}
	if c := d.BudgetCap; c.MaxCostMicros <= 0 || c.MaxCostMicros > MaxCapCostMicros {
		return fieldf("budget_cap.max_cost_micros", "%d is not a bound: between 1 and %d", c.MaxCostMicros, MaxCapCostMicros)
	}
	if c := d.BudgetCap; c.MaxTokens <= 0 || c.MaxTokens > MaxCapTokens {
		return fieldf("budget_cap.max_tokens", "%d is not a bound: between 1 and %d", c.MaxTokens, MaxCapTokens)
	}
	if d.Tolerances.MaxCostRatio < 0 || d.Tolerances.MaxTimeRatio < 0 {
		return fieldf("tolerances", "a ratio is not negative")
	}
	tools := map[string]bool{}
	for i := range d.Tools {
		k, err := d.Tools[i].validate(fmt.Sprintf("tools[%d]", i))
		if err != nil {
			return err
		}
		if tools[k.GetName()] {
			return fieldf(fmt.Sprintf("tools[%d].contract.name", i), "%q is named twice", k.GetName())
		}
		tools[k.GetName()] = true
		d.contracts = append(d.contracts, k)
	}
	if len(d.Samples) == 0 || len(d.Samples) > MaxSamples {
		return fieldf("samples", "%d samples: between 1 and %d", len(d.Samples), MaxSamples)
	}
	names := map[string]bool{}
	for i := range d.Samples {
		s := &d.Samples[i]
		path := fmt.Sprintf("samples[%d]", i)
		if err := s.validate(path, d.BudgetCap, tools); err != nil {
			return err
		}
		if names[s.Name] {
			return fieldf(path+".name", "%q is named twice", s.Name)
		}
		names[s.Name] = true
	}
	return nil
}

func (t *Tool) validate(path string) (*stewardv1.ToolContract, error) {
	var k stewardv1.ToolContract
	if len(t.Contract) == 0 {
		return nil, fieldf(path+".contract", "is required: a tool contract as `steward tools register` takes")
	}
	if err := protojson.Unmarshal(t.Contract, &k); err != nil {
		return nil, fieldf(path+".contract", "%v", err)
	}
	if k.GetName() == "" || k.GetVersion() == "" {
		return nil, fieldf(path+".contract.name", "a tool contract names the tool and its version")
	}
	// Steward's rule for a tool's name, checked here: the name is the
	// path of its stub too, and must be one.
	if !eventlog.ValidTaskID(k.GetName()) {
		return nil, fieldf(path+".contract.name", "%q: want 1-64 letters, digits, '-' or '_'", k.GetName())
	}
	if k.Endpoint != nil {
		return nil, fieldf(path+".contract", "carries an endpoint: name the target as staging (a URL) or stub, so the canary never calls what it was not told to")
	}
	switch {
	case (t.Staging == "") == (t.Stub == nil):
		return nil, fieldf(path, "name exactly one target: staging (a URL) or stub")
	case t.Staging != "":
		u, err := url.Parse(t.Staging)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fieldf(path+".staging", "%q is not an http(s) URL", t.Staging)
		}
	case t.Stub.Status != 0 && (t.Stub.Status < 200 || t.Stub.Status > 599):
		return nil, fieldf(path+".stub.status", "%d is not an HTTP status", t.Stub.Status)
	case len(t.Stub.Body) > 0 && !json.Valid(t.Stub.Body):
		return nil, fieldf(path+".stub.body", "is not JSON")
	}
	return &k, nil
}

// Contracts are the tools' contracts as the definition gives them, with
// no endpoint (Targets sets them).
func (d *Definition) Contracts() []*stewardv1.ToolContract { return d.contracts }

// Approvers are the principals the samples approve as, each once.
func (d *Definition) Approvers() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, s := range d.Samples {
		add(s.ApproveAs)
		for _, st := range s.Steps {
			if st.Propose != nil {
				add(st.Propose.ApproveAs)
			}
		}
	}
	return out
}
