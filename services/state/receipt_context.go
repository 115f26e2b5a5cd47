package state

import (
	"fmt"
	"strings"

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
func contextMarkdown(b *strings.Builder, r *stewardv1.Receipt) {
	line := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	line("")
	line("## Context and inputs")
	line("")
	if len(r.Inputs) == 0 && len(r.ContextRefs) == 0 {
		line("The contract names no inputs and no context.")
		return
	}
	line("As the contract pins them. Steward recorded these references and showed them to policy; it did not fetch them.")
	line("")
	line("| Kind | URI | Version | Digest |")
	line("| --- | --- | --- | --- |")
	for _, set := range []struct {
		kind string
		refs []*stewardv1.ContextRef
	}{{"input", r.Inputs}, {"context", r.ContextRefs}} {
		for _, c := range set.refs {
			line("| %s | %s | %s | %s |", set.kind, code(c.Uri, true), orDash(code(c.Version, true)), orDash(code(c.Digest, true)))
		}
	}
}
