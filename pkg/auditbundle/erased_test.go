package auditbundle

import (
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestErasedContentIsNotedNotFailed: a request the bundle says was erased
// counts as present, without bytes, and is noted with its reason; an
// erasure of content still held, or of a section that holds no content,
// fails.
func TestErasedContentIsNotedNotFailed(t *testing.T) {
	b := &stewardv1.AuditBundle{Erased: []*stewardv1.ErasedBlob{
		{Section: SectionRequests, Hash: "gone", Reason: "tenant left"},
		{Section: SectionRequests, Hash: "held", Reason: "tenant left"},
		{Section: SectionKeys, Hash: "k", Reason: "why not"},
		{Section: SectionInputs, Hash: "i", Reason: "another call's"},
	}}
	r := &Report{}
	requests := map[string][]byte{"held": []byte("still here")}
	admitErased(b, map[string]map[string][]byte{SectionRequests: requests}, r)
	if data, ok := requests["gone"]; !ok || data != nil {
		t.Errorf("the erased request is not counted as present without bytes: %q, %v", data, ok)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "gone erased: tenant left") {
		t.Errorf("notes: %v", r.Notes)
	}
	var failed []string
	for _, f := range r.Failures {
		failed = append(failed, f.Section+" "+f.Item)
	}
	if len(failed) != 2 || failed[0] != "requests held" || failed[1] != "bundle erased k" {
		t.Errorf("failures: %v, want the held request and the key", failed)
	}
}
