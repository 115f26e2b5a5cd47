package canary

import (
	"fmt"
	"strings"
	"time"
)

// Run is what one sample did, as observed from its task.
type Run struct {
	Sample   string `json:"sample"`
	TaskID   string `json:"task_id,omitempty"`
	Status   string `json:"status"`
	Accepted bool   `json:"accepted"`
	// Reason is why it was not accepted, in words.
	Reason     string          `json:"reason,omitempty"`
	Actions    []ActionRecord  `json:"actions"`
	Decisions  []DecisionEntry `json:"decisions"`
	CostMicros int64           `json:"cost_micros"`
	Tokens     int64           `json:"tokens"`
	Millis     int64           `json:"millis"`
}

// ActionRecord is one action of a run, in the ledger's order.
type ActionRecord struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	// Decision is policy's: allow, deny or approval (needed).
	Decision string `json:"decision"`
	Status   string `json:"status"`
}

// DecisionEntry is one recorded model decision.
type DecisionEntry struct {
	Model string `json:"model"`
}

// Baseline is the last accepted run of every sample: written only by a
// run where every sample passed.
type Baseline struct {
	Definition string         `json:"definition"`
	Written    time.Time      `json:"written"`
	Against    string         `json:"against,omitempty"`
	Runs       map[string]Run `json:"runs"`
}

// Difference is one way a run differs from its baseline. Fails is false
// for what a canary expects to change (a tool's version, a model's id,
// cost and time within tolerance): reported, not judged.
type Difference struct {
	What  string `json:"what"`
	Fails bool   `json:"fails"`
}

// Verdict is one sample judged.
type Verdict struct {
	Sample         string       `json:"sample"`
	Kind           string       `json:"kind"`
	Run            Run          `json:"run"`
	Expected       string       `json:"expected"`
	ExpectationMet bool         `json:"expectation_met"`
	NoBaseline     bool         `json:"no_baseline,omitempty"`
	Differences    []Difference `json:"differences"`
	Pass           bool         `json:"pass"`
}

// Judge judges run of sample s against its baseline run (nil: none).
func Judge(s Sample, run Run, base *Run, tol Tolerances) Verdict {
	v := Verdict{Sample: s.Name, Kind: s.Kind, Run: run, Expected: expected(s.Expect)}
	v.ExpectationMet = run.Accepted == s.Expect.Accepted &&
		(s.Expect.Accepted || strings.Contains(run.Reason, s.Expect.Reason))
	if base == nil {
		v.NoBaseline = true
	} else {
		v.Differences = Compare(*base, run, tol)
	}
	v.Pass = v.ExpectationMet
	for _, d := range v.Differences {
		v.Pass = v.Pass && !d.Fails
	}
	return v
}

func expected(e Expect) string {
	if e.Accepted {
		return "accepted"
	}
	return fmt.Sprintf("not accepted, %q", e.Reason)
}

// Compare lists how run differs from base: actions step by step (tool,
// version, policy decision, outcome), decisions (models), cost and time.
func Compare(base, run Run, tol Tolerances) []Difference {
	var out []Difference
	for i := range max(len(base.Actions), len(run.Actions)) {
		out = append(out, compareAction(i, base.Actions, run.Actions)...)
	}
	for i := range max(len(base.Decisions), len(run.Decisions)) {
		switch {
		case i >= len(run.Decisions):
			out = append(out, Difference{fmt.Sprintf("decision %d (model %s): not recorded", i+1, base.Decisions[i].Model), true})
		case i >= len(base.Decisions):
			out = append(out, Difference{fmt.Sprintf("decision %d (model %s): new", i+1, run.Decisions[i].Model), true})
		case base.Decisions[i].Model != run.Decisions[i].Model:
			out = append(out, Difference{fmt.Sprintf("decision %d: model %s → %s", i+1, base.Decisions[i].Model, run.Decisions[i].Model), false})
		}
	}
	if d, ok := ratio("cost", base.CostMicros, run.CostMicros, tol.MaxCostRatio, "µ"); ok {
		out = append(out, d)
	}
	if d, ok := ratio("time", base.Millis, run.Millis, tol.MaxTimeRatio, "ms"); ok {
		out = append(out, d)
	}
	return out
}

func compareAction(i int, base, run []ActionRecord) []Difference {
	at := fmt.Sprintf("action %d", i+1)
	switch {
	case i >= len(run):
		return []Difference{{fmt.Sprintf("%s tool %s@%s: not proposed", at, base[i].Tool, base[i].Version), true}}
	case i >= len(base):
		return []Difference{{fmt.Sprintf("%s tool %s@%s: new (decision %s, %s)", at, run[i].Tool, run[i].Version, run[i].Decision, run[i].Status), true}}
	}
	b, r := base[i], run[i]
	if b.Tool != r.Tool {
		return []Difference{{fmt.Sprintf("%s: tool %s@%s → %s@%s", at, b.Tool, b.Version, r.Tool, r.Version), true}}
	}
	at = fmt.Sprintf("%s tool %s@%s", at, r.Tool, r.Version)
	var out []Difference
	if b.Version != r.Version {
		out = append(out, Difference{fmt.Sprintf("%s: version %s → %s", at, b.Version, r.Version), false})
	}
	if b.Decision != r.Decision {
		out = append(out, Difference{fmt.Sprintf("%s: decision %s → %s", at, b.Decision, r.Decision), true})
	}
	// A changed decision changes the outcome with it: said once.
	if b.Decision == r.Decision && b.Status != r.Status {
		out = append(out, Difference{fmt.Sprintf("%s: outcome %s → %s", at, b.Status, r.Status), true})
	}
	return out
}

// ratio reports a change of a measure, failing past limit (0: never).
func ratio(name string, base, now int64, limit float64, unit string) (Difference, bool) {
	if base == now {
		return Difference{}, false
	}
	d := Difference{What: fmt.Sprintf("%s %d%s → %d%s", name, base, unit, now, unit)}
	if limit > 0 && base > 0 {
		r := float64(now) / float64(base)
		d.What += fmt.Sprintf(" (×%.2f, tolerance ×%.2f)", r, limit)
		d.Fails = r > limit
	} else if limit > 0 && now > 0 {
		d.What += " (from nothing)"
		d.Fails = true
	}
	return d, true
}

func acceptedWord(ok bool) string {
	if ok {
		return "accepted"
	}
	return "not accepted"
}

// Sentence says a verdict in words: "sample X: passed" with what changed
// within bounds, or what failed: each difference that fails and the
// expectation missed.
func (v Verdict) Sentence() string {
	var parts, noted []string
	for _, d := range v.Differences {
		if d.Fails {
			parts = append(parts, d.What)
		} else {
			noted = append(noted, d.What)
		}
	}
	if !v.ExpectationMet {
		got := acceptedWord(v.Run.Accepted)
		if !v.Run.Accepted && v.Run.Reason != "" {
			got += ": " + v.Run.Reason
		}
		parts = append(parts, fmt.Sprintf("%s (expected %s)", got, v.Expected))
	}
	if v.Pass && len(noted) > 0 {
		return "sample " + v.Sample + ": passed (" + strings.Join(noted, "; ") + ")"
	}
	if v.Pass {
		return "sample " + v.Sample + ": passed"
	}
	return "sample " + v.Sample + ": " + strings.Join(parts, "; ")
}
