package policycanary

import (
	"cmp"
	"slices"
)

// Exit codes of steward policy canary (docs/policy-canary.md): an error
// wins over any change, a loosening over a tightening.
const (
	ExitUnchanged = 0
	ExitLoosened  = 1
	ExitTightened = 2
	ExitError     = 3
)

// Report is a canary's findings.
type Report struct {
	// Candidate is the revision of the bundle re-evaluated under.
	Candidate string `json:"candidate"`
	// Snapshots is every snapshot read; Reevaluated those evaluated.
	Snapshots   int `json:"snapshots"`
	Reevaluated int `json:"reevaluated"`
	// NotReevaluable counts the others by why (NotKept, NotHeld, …).
	NotReevaluable map[string]int `json:"notReevaluable"`
	Groups         []Group        `json:"groups"`
	Changes        []Change       `json:"changes"`
	// Errors are the evaluations that failed.
	Errors []string `json:"errors,omitempty"`
}

// Group is the changes of one tool, one way, from one decision to
// another, for one reason.
type Group struct {
	Direction  Direction `json:"direction"`
	Tool       string    `json:"tool"`
	Transition string    `json:"transition"`
	Reason     string    `json:"reason"`
	Count      int       `json:"count"`
}

// Count is how many changes went direction d.
func (r *Report) Count(d Direction) int {
	n := 0
	for _, c := range r.Changes {
		if c.Direction == d {
			n++
		}
	}
	return n
}

// ExitCode is the code a pipeline gates on. Snapshots read of which none
// could be re-evaluated (no input kept) are an error, not "unchanged": the
// canary checked nothing, and a pipeline must not pass the bundle on it.
func (r *Report) ExitCode() int {
	switch {
	case len(r.Errors) > 0, r.Snapshots > 0 && r.Reevaluated == 0:
		return ExitError
	case r.Count(Loosened) > 0:
		return ExitLoosened
	case r.Count(Tightened) > 0:
		return ExitTightened
	}
	return ExitUnchanged
}

// groups counts changes by direction, tool, transition and reason:
// loosenings first, then the largest groups.
func groups(changes []Change) []Group {
	at := map[Group]int{}
	var out []Group
	for _, c := range changes {
		k := Group{Direction: c.Direction, Tool: c.Tool, Transition: c.Transition(), Reason: c.Reason()}
		i, ok := at[k]
		if !ok {
			i, at[k] = len(out), len(out)
			out = append(out, k)
		}
		out[i].Count++
	}
	slices.SortStableFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(a.Direction, b.Direction), cmp.Compare(b.Count, a.Count), // loosened sorts first
			cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Transition, b.Transition), cmp.Compare(a.Reason, b.Reason))
	})
	return out
}
