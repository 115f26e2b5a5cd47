package breaker

import "strconv"

// State is where a breaker stands.
type State int

// The states of a breaker.
const (
	// Closed lets calls through and counts their outcomes.
	Closed State = iota
	// Open refuses calls until its cool-down ends.
	Open
	// HalfOpen lets a few probe calls through to learn whether the service
	// is back.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Outcome is what a call said about the service it went to.
type Outcome int

// The outcomes a caller records.
const (
	// Success means the service answered.
	Success Outcome = iota
	// Failure is a transient or unknown failure: the service may be down.
	Failure
	// Neutral is a deterministic failure, such as bad parameters, that says
	// nothing about the service's health; it is counted neither way.
	Neutral
)

// String returns "success", "failure" or "neutral".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Neutral:
		return "neutral"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}
