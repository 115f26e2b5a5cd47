// Package policy is the governance plane's policy engine: it evaluates an
// OPA (Rego v1) policy bundle over the facts of one proposed action and
// returns a Result — allow, deny or require_approval, with a risk tier,
// approver roles, reasons and the revision of the bundle that decided.
//
// A bundle is a directory of .rego files; Load with an empty directory uses
// the default bundle compiled into the binary (the default/ directory next
// to this file). The query data.steward.policy.decision is prepared once per
// bundle and the prepared query is shared by all goroutines that call
// Evaluate, which takes the input as Go's values, or EvaluateValue, which
// takes it as OPA's own (the governance plane builds an action's input so,
// with Parts shared by many inputs). Reload compiles a changed bundle off to the side and swaps it in
// atomically, so an evaluation always sees one whole bundle, old or new, and
// a bundle that does not compile never replaces one that does. A bundle may
// also judge whole plans: EvaluatePlan evaluates data.steward.plan.decision,
// prepared alongside when the bundle has a module in package steward.plan.
//
// Policy fails closed: an undefined decision, a decision that is not an
// object, or a decision value the engine does not know is a deny, never an
// error and never an allow. A Rego runtime error is returned as an error;
// the caller treats it as a deny and evaluates again later.
//
// Every .rego file has a _test.rego sibling with Rego unit tests; they are
// not part of the evaluated bundle, and this package's Go tests run them.
package policy
