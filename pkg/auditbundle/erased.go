package auditbundle

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// admitErased counts the content b says was erased as present in the
// sections given (by section name, the blobs checkBlobs kept), with no
// bytes, and notes each: an erased request, result or input leaves only
// the hash the events commit to, so the chains still verify and only the
// erasure is reported. An erasure of content the bundle still holds, or
// of a section that cannot be erased, fails.
func admitErased(b *stewardv1.AuditBundle, sections map[string]map[string][]byte, r *Report) {
	for _, e := range b.Erased {
		blobs, ok := sections[e.Section]
		if !ok {
			if !erasable(e.Section) {
				r.fail(SectionBundle, "erased "+e.Hash, "section %q holds nothing that may be erased", e.Section)
			}
			continue // another call's section
		}
		if data, held := blobs[e.Hash]; held && data != nil {
			r.fail(e.Section, e.Hash, "said to be erased, yet the bundle holds it")
			continue
		}
		blobs[e.Hash] = nil
		r.note("%s %s erased: %s", e.Section, e.Hash, e.Reason)
	}
}

// erasable reports whether content of section may be erased.
func erasable(section string) bool {
	return section == SectionRequests || section == SectionResults || section == SectionInputs
}
