package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestContextRefsAreChecked creates tasks with context refs and inputs:
// well-formed ones are recorded on the contract as sent; each malformed
// one is refused naming its field, with the code for what is wrong, and
// nothing is appended.
func TestContextRefsAreChecked(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	digest := control.DigestPrefix + strings.Repeat("ab", 32)
	good := validRequest("ctx-good")
	good.Contract.ContextRefs = []*stewardv1.ContextRef{
		{Uri: "s3://kb/runbooks/oncall.md", Version: "v12", Digest: digest},
		{Uri: "https://wiki.example/incidents?week=48"},
	}
	good.Contract.InputSnapshot = &stewardv1.InputSnapshot{Version: "inputs-7", Inputs: []*stewardv1.ContextRef{
		{Uri: "postgres://warehouse/incidents", Version: "2026-11-30", Digest: digest},
	}}
	tk, _, err := r.ctl.CreateTask(ctx, "t", good)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(tk.Contract.InputSnapshot, good.Contract.InputSnapshot) || len(tk.Contract.ContextRefs) != 2 || !proto.Equal(tk.Contract.ContextRefs[0], good.Contract.ContextRefs[0]) {
		t.Errorf("the contract records %v and %v, want them as sent", tk.Contract.ContextRefs, tk.Contract.InputSnapshot)
	}

	many := make([]*stewardv1.ContextRef, control.MaxListLen+1)
	for i := range many {
		many[i] = &stewardv1.ContextRef{Uri: "s3://kb/x"}
	}
	for _, tt := range []struct {
		name  string
		edit  func(*stewardv1.TaskContract)
		code  errs.Code
		field string
	}{
		{"no uri", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/a"}, {Version: "v1"}}
		}, errs.Invalid, "contract.context_refs[1].uri"},
		{"a relative uri", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/a"}, {Uri: "s3://kb/b"}, {Uri: "runbooks/oncall.md"}}
		}, errs.Invalid, "contract.context_refs[2].uri"},
		{"a uri that does not parse", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "http://[::1"}}
		}, errs.Invalid, "contract.context_refs[0].uri"},
		{"a digest without its algorithm", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/a"}, {Uri: "s3://kb/b"}, {Uri: "s3://kb/c", Digest: strings.Repeat("ab", 32)}}
		}, errs.Invalid, "contract.context_refs[2].digest"},
		{"a digest of another algorithm", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/a", Digest: "md5:" + strings.Repeat("ab", 16)}}
		}, errs.Invalid, "contract.context_refs[0].digest"},
		{"an uppercase digest", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/a", Digest: control.DigestPrefix + strings.Repeat("AB", 32)}}
		}, errs.Invalid, "contract.context_refs[0].digest"},
		{"a short digest", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/a", Digest: control.DigestPrefix + "abc"}}
		}, errs.Invalid, "contract.context_refs[0].digest"},
		{"a long version", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/a", Version: strings.Repeat("v", control.MaxRefLen+1)}}
		}, errs.TooLarge, "contract.context_refs[0].version"},
		{"a long uri", func(c *stewardv1.TaskContract) {
			c.ContextRefs = []*stewardv1.ContextRef{{Uri: "s3://kb/" + strings.Repeat("a", control.MaxTextLen)}}
		}, errs.TooLarge, "contract.context_refs[0].uri"},
		{"too many refs", func(c *stewardv1.TaskContract) { c.ContextRefs = many }, errs.TooLarge, "contract.context_refs"},
		{"an input without a uri", func(c *stewardv1.TaskContract) {
			c.InputSnapshot = &stewardv1.InputSnapshot{Inputs: []*stewardv1.ContextRef{{Uri: "s3://kb/a"}, {Digest: "sha256:x"}}}
		}, errs.Invalid, "contract.input_snapshot.inputs[1].uri"},
		{"an input with a bad digest", func(c *stewardv1.TaskContract) {
			c.InputSnapshot = &stewardv1.InputSnapshot{Version: "v1", Inputs: []*stewardv1.ContextRef{{Uri: "s3://kb/a", Digest: "sha256:x"}}}
		}, errs.Invalid, "contract.input_snapshot.inputs[0].digest"},
		{"too many inputs", func(c *stewardv1.TaskContract) {
			c.InputSnapshot = &stewardv1.InputSnapshot{Inputs: many}
		}, errs.TooLarge, "contract.input_snapshot.inputs"},
		{"a long input version", func(c *stewardv1.TaskContract) {
			c.InputSnapshot = &stewardv1.InputSnapshot{Version: strings.Repeat("v", control.MaxRefLen+1)}
		}, errs.TooLarge, "contract.input_snapshot.version"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest("")
			tt.edit(req.Contract)
			_, _, err := r.ctl.CreateTask(ctx, "t", req)
			var e *errs.Error
			if !errors.As(err, &e) || e.Field != tt.field || e.Code != tt.code {
				t.Fatalf("err = %v, want %v naming %s", err, tt.code, tt.field)
			}
		})
	}
	if n, err := r.Log.LastTaskSequence(ctx); err != nil || n != 1 {
		t.Errorf("the log holds %d events (%v), want only the good task's creation", n, err)
	}
}
