// Package plan is the pure part of plans: an agent's plan as data
// (stewardv1.Plan), checked before anything runs, and the questions a
// runtime asks of it while it runs. No clock and no I/O; but it links
// pkg/action (canonical JSON) and pkg/toolreg (NarrowRetry), whose
// packages hold NATS stores, so the offline fold does not import it.
//
// Why a plan is checked whole, up front: once the agent hands over a DAG
// of steps, a mistake found halfway (a step that names a tool the task may
// not call, an expression that reads a result it cannot see, a cycle that
// never finishes) has already spent work and perhaps made side effects.
// Validate refuses such a plan before its first step, naming the step and
// the field (plan.steps[3].depends_on[0]) as an errs.Invalid error, which
// the RPC edge turns into InvalidArgument.
//
// Parameters, conditions and assertions refer to earlier results in CEL,
// not in a template language: CEL is deterministic, type-checked and
// bounded in cost. A step may read only the steps it depends on, directly
// or through others, so what a step sees is fixed by the plan's shape and
// not by which step happened to finish first.
//
// Hash binds an approval to one plan; Diff says what a revision keeps;
// Ready says which steps may start; the Eval functions evaluate a step's
// expressions over earlier results. docs/plans.md describes the format.
// The control plane's plan driver (services/control) runs plans with
// them.
//
// Everything here is pure and safe for concurrent use.
package plan
