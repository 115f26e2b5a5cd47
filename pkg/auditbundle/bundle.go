// Package auditbundle writes and verifies audit bundles (docs/audit.md,
// "Audit bundles"): one file holding a task's events and everything
// needed to check its decisions offline — its sub-tasks' and ancestors'
// events, the requests and results they reference, the tool contracts,
// each policy snapshot's recorded input, the sources of every policy
// revision that decided one, and governance's public keys. Verify checks
// it with no server: the chains, signatures and credentials (pkg/audit),
// that approvers were allowed, that every blob re-hashes to its name,
// that each snapshot re-evaluates to the decision recorded, and that each
// receipt recomputes; every failure names its section and item.
//
// Re-evaluating policy and rebuilding receipts are the governance and
// state planes' code, which a package here may not import: the caller
// hands them in (Checks), as the steward binary does.
package auditbundle

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Format is the layout version Marshal writes.
const Format = 1

// Sections, as failures name them.
const (
	SectionBundle      = "bundle"
	SectionEvents      = "events"
	SectionCredentials = "credentials"
	SectionApprovals   = "approvals"
	SectionRequests    = "requests"
	SectionResults     = "results"
	SectionTools       = "tools"
	SectionInputs      = "inputs"
	SectionPolicies    = "policies"
	SectionKeys        = "keys"
	SectionReceipt     = "receipt"
)

// Failure is one thing in a bundle that does not hold.
type Failure struct {
	// Section is one of the Section constants.
	Section string
	// Item names what failed: "task T event 3 (id)", a hash, a revision.
	Item   string
	Reason string
}

func (f Failure) String() string { return f.Section + ": " + f.Item + ": " + f.Reason }

// Report is what Verify found.
type Report struct {
	Failures []Failure
	// Notes say what was not checked, and why (a snapshot recorded before
	// inputs were kept), without failing.
	Notes []string
	// Counts of what verified.
	Tasks, Events, Snapshots, Reevaluated, Approvals, Receipts int
	// Heads are the verified tasks' chains, by task id.
	Heads []TaskHead
	// Pinned is set when signatures were checked against --trust-key
	// keys rather than the bundle's own.
	Pinned bool
}

// OK reports whether nothing failed.
func (r *Report) OK() bool { return len(r.Failures) == 0 }

func (r *Report) fail(section, item, format string, args ...any) {
	r.Failures = append(r.Failures, Failure{Section: section, Item: item, Reason: fmt.Sprintf(format, args...)})
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Marshal sorts b's sections and encodes it deterministically: the same
// content gives the same bytes. It changes b.
func Marshal(b *stewardv1.AuditBundle) ([]byte, error) {
	b.Format = Format
	slices.SortFunc(b.Tasks, func(x, y *stewardv1.BundleTask) int { return strings.Compare(x.TaskId, y.TaskId) })
	for _, blobs := range [][]*stewardv1.BundleBlob{b.Requests, b.Results, b.Inputs} {
		slices.SortFunc(blobs, func(x, y *stewardv1.BundleBlob) int { return strings.Compare(x.Hash, y.Hash) })
	}
	slices.SortFunc(b.Tools, func(x, y []byte) int { return strings.Compare(string(x), string(y)) })
	slices.SortFunc(b.Policies, func(x, y *stewardv1.PolicySources) int { return strings.Compare(x.Revision, y.Revision) })
	slices.SortFunc(b.Withheld, func(x, y *stewardv1.WithheldTask) int { return strings.Compare(x.TaskId, y.TaskId) })
	slices.SortFunc(b.Erased, func(x, y *stewardv1.ErasedBlob) int {
		return strings.Compare(x.Section+" "+x.Hash, y.Section+" "+y.Hash)
	})
	slices.SortFunc(b.Keys, func(x, y *stewardv1.BundleKey) int { return strings.Compare(x.KeyId, y.KeyId) })
	return proto.MarshalOptions{Deterministic: true}.Marshal(b)
}

// Unmarshal decodes a bundle file.
func Unmarshal(data []byte) (*stewardv1.AuditBundle, error) {
	b := &stewardv1.AuditBundle{}
	if err := proto.Unmarshal(data, b); err != nil {
		return nil, fmt.Errorf("not an audit bundle: %w", err)
	}
	if b.Format != Format {
		return nil, fmt.Errorf("audit bundle format %d; this steward reads %d", b.Format, Format)
	}
	return b, nil
}
