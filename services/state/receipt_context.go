package state

import (
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// cloneRefs copies a contract's context refs into a receipt.
func cloneRefs(refs []*stewardv1.ContextRef) []*stewardv1.ContextRef {
	var out []*stewardv1.ContextRef
	for _, r := range refs {
		out = append(out, proto.CloneOf(r))
	}
	return out
}

// contextMarkdown renders the receipt's "Context and inputs" section: the
// inputs the task started from, then the context it was given, each by
// URI, version and digest, as the contract pinned them.
func contextMarkdown(w md, r *stewardv1.Receipt) {
	w.section("Context and inputs")
	if len(r.Inputs) == 0 && len(r.ContextRefs) == 0 {
		w.line("The contract names no inputs and no context.")
		return
	}
	w.line("As the contract pins them. Steward recorded these references and showed them to policy; it did not fetch them.")
	w.line("")
	var rows [][]string
	for _, set := range []struct {
		kind string
		refs []*stewardv1.ContextRef
	}{{"input", r.Inputs}, {"context", r.ContextRefs}} {
		for _, c := range set.refs {
			rows = append(rows, []string{set.kind, code(c.Uri, true), orDash(code(c.Version, true)), orDash(code(c.Digest, true))})
		}
	}
	w.table("Kind | URI | Version | Digest", rows)
}
