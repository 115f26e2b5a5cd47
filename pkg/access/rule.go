// Package access says who may call each RPC: one table (Table), one row per
// procedure, that the RPC edge enforces for every call and docs/roles.md
// writes down. It holds rules and nothing else — no identities, no I/O —
// so that the edge, the planes' party hook and the documentation test all
// read the same rows.
//
// A rule is checked only when callers are authenticated (a token file, the
// default): in open mode (--insecure) a caller names themselves and holds
// no roles, and the table is not applied. Every value here is immutable
// and safe to read concurrently.
package access

import (
	"slices"
	"strings"
)

// The roles the table names. A token file grants them.
const (
	// Admin may call everything: every rule lets it through, and it holds
	// every role named here that a plane asks for — not the roles a policy
	// names for an approval, which an admin who approves is granted by
	// name, so that the record shows a holder's judgement.
	Admin       = "admin"
	Operator    = "operator"
	ToolAdmin   = "tool-admin"
	BudgetOwner = "budget-owner"
	Auditor     = "auditor"
)

// Party is a part a principal plays in one task, as its events name it.
type Party int

const (
	// Agent is the principal that created the task, or the one its
	// credential was issued to (the delegate of a sub-task): whoever does
	// the task's work.
	Agent Party = 1 << iota
	// Owner is the contract's requester or accountable owner: whom the
	// task's work is for, who answers its questions and steers it.
	Owner
	// Backup is the contract's input_backup_ref: a principal, or anyone
	// holding the role it names ("role:<name>"), to whom a question that
	// waits too long is escalated. The plane lets them answer only once it
	// was (docs/input.md).
	Backup
)

// Group is the kind of call a procedure is, as docs/roles.md sorts them.
type Group string

// The groups of calls.
const (
	Steering  Group = "steering" // pause, resume, cancel, fail a task
	Work      Group = "work"     // the agent doing its task's work
	Review    Group = "review"   // what a task's people decide: acceptance, deadlines, answers
	Approval  Group = "approval" // deciding actions that wait for approval
	Operation Group = "operator" // running Steward: tools, budgets, credentials, settling, findings
	Read      Group = "read"     // queries, watches, replays
	Start     Group = "start"    // creating a task
)

// Rule says who may call one procedure. A caller must be authenticated,
// unless the rule is Public; then, when the rule names neither roles nor
// parties, anyone may call it.
// Otherwise the caller must hold one of Roles, or play one of Parties in
// the task the request names (in its TaskField). Admin always may.
type Rule struct {
	Group Group
	// Roles are roles any one of which lets a caller through.
	Roles []string
	// Parties are the parts in the request's task any one of which lets
	// a caller through. They are looked up by the plane that serves the
	// procedure (its party hook), after the role check failed.
	Parties Party
	// TaskField is the request field that names the task the parties are
	// looked up in; "task_id" when empty.
	TaskField string
	// Plane names a further check the serving plane makes on the task
	// itself, in every mode (e.g. an approval's roles, the acceptance
	// owner): it is documented here, decided there.
	Plane string
	// Public lets a caller without a token through (one that presents a
	// token must present a valid one): for what is public by nature, such
	// as the key that verifies what governance signs, which deployment
	// jobs fetch before any token is handed out. It names neither roles
	// nor parties.
	Public bool
	// PlaneField names a request field which, when set, leaves the
	// roles to the serving plane (Plane says how): one procedure whose
	// request names one of two things, e.g. a task's credential (the
	// operator role, refused here, logged and counted) or a schedule's
	// (its creator, whom only the plane knows).
	PlaneField string
	// Why says why the rule is what it is.
	Why string
}

// Field returns the request field that names the rule's task.
func (r Rule) Field() string {
	if r.TaskField == "" {
		return "task_id"
	}
	return r.TaskField
}

// Open reports whether any authenticated caller may call the procedure.
func (r Rule) Open() bool { return len(r.Roles) == 0 && r.Parties == 0 }

// AllowsRoles reports whether holding roles is enough to call the
// procedure, before any task is looked at.
func (r Rule) AllowsRoles(roles []string) bool {
	if r.Open() || slices.Contains(roles, Admin) {
		return true
	}
	for _, want := range r.Roles {
		if slices.Contains(roles, want) {
			return true
		}
	}
	return false
}

// TaskParties are the principals that play each part in one task: what a
// plane's party hook returns.
type TaskParties struct {
	Agents []string // creator and credential principal
	Owners []string // requester and accountable owner
	// Backup is the input backup: a principal, or "role:<name>".
	Backup string
}

// AllowsParty reports whether principal, holding roles, plays one of the
// rule's parts in the task p describes.
func (r Rule) AllowsParty(principal string, roles []string, p TaskParties) bool {
	return r.Parties&Agent != 0 && slices.Contains(p.Agents, principal) ||
		r.Parties&Owner != 0 && slices.Contains(p.Owners, principal) ||
		r.Parties&Backup != 0 && IsBackup(p.Backup, principal, roles)
}

// IsBackup reports whether principal, holding roles, is backup: the
// principal it names, or a holder of the role "role:<name>" names.
func IsBackup(backup, principal string, roles []string) bool {
	if role, ok := strings.CutPrefix(backup, "role:"); ok {
		return role != "" && slices.Contains(roles, role)
	}
	return backup != "" && backup == principal
}

// Who is the rule's "who may call" in the words docs/roles.md uses,
// comma-separated, any one enough: "public", "anyone", "role:NAME",
// "party:agent", "party:owner". It is machine-readable: the documentation
// test compares it with the table's column.
func (r Rule) Who() string {
	if r.Public {
		return "public"
	}
	if r.Open() {
		return "anyone"
	}
	var who []string
	if r.Parties&Agent != 0 {
		who = append(who, "party:agent")
	}
	if r.Parties&Owner != 0 {
		who = append(who, "party:owner")
	}
	if r.Parties&Backup != 0 {
		who = append(who, "party:backup")
	}
	for _, role := range r.Roles {
		who = append(who, "role:"+role)
	}
	return strings.Join(who, ", ")
}

// Needs says, for a refusal, what the rule asks for in words.
func (r Rule) Needs() string {
	var who []string
	if r.Parties&Agent != 0 {
		who = append(who, "the agent the task belongs to (its creator or delegate)")
	}
	if r.Parties&Owner != 0 {
		who = append(who, "its requester or accountable owner")
	}
	if r.Parties&Backup != 0 {
		who = append(who, "its input backup (once a question was escalated to them)")
	}
	switch len(r.Roles) {
	case 0:
	case 1:
		who = append(who, "the "+r.Roles[0]+" role")
	default:
		who = append(who, "one of the roles "+strings.Join(r.Roles, ", "))
	}
	switch len(who) {
	case 0:
		return "nothing"
	case 1:
		return who[0]
	}
	return strings.Join(who[:len(who)-1], ", ") + " or " + who[len(who)-1]
}
