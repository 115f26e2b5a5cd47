package control

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// DigestPrefix starts a ContextRef's digest: the only algorithm a digest
// may name, so that anyone holding the content can check it the same way
// (docs/contract.md, "Context and inputs").
const DigestPrefix = "sha256:"

// checkContextRefs checks contract.context_refs or
// contract.input_snapshot.inputs: at most MaxListLen entries, each with an
// absolute uri, a version of at most MaxRefLen bytes, and a digest that is
// empty or "sha256:" and 64 lowercase hex digits. Steward does not fetch
// what they point at: it records them, shows them to policy and on the
// receipt, and a digest is what lets anyone check later that the content
// was what the task was given.
func checkContextRefs(field string, refs []*stewardv1.ContextRef) error {
	if err := checkList(field, len(refs)); err != nil {
		return err
	}
	for i, r := range refs {
		f := fmt.Sprintf("%s[%d]", field, i)
		if r == nil {
			return errs.Field(f, "is empty")
		}
		for _, err := range []error{
			checkText(f+".uri", r.Uri, MaxTextLen, true),
			checkText(f+".version", r.Version, MaxRefLen, false),
			checkText(f+".digest", r.Digest, MaxRefLen, false),
		} {
			if err != nil {
				return err
			}
		}
		if u, err := url.Parse(r.Uri); err != nil || u.Scheme == "" {
			return errs.Field(f+".uri", "%s is not an absolute URI (scheme:…, such as s3://bucket/key or https://host/path)", errs.Quote(r.Uri))
		}
		if hex, ok := strings.CutPrefix(r.Digest, DigestPrefix); r.Digest != "" && (!ok || !task.ValidSHA256(hex)) {
			return errs.Field(f+".digest", "%s is not %s followed by 64 lowercase hex digits", errs.Quote(r.Digest), DigestPrefix)
		}
	}
	return nil
}
