package access_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/steward-run/steward/pkg/access"
	_ "github.com/steward-run/steward/pkg/gen/steward/v1" // registers the services
)

// procedures returns every RPC procedure of every steward.v1 service, as
// the generated code registers them: a new RPC shows up here by itself.
func procedures(t *testing.T) []string {
	t.Helper()
	var out []string
	for p := range methods(t) {
		out = append(out, p)
	}
	return out
}

// methods returns every procedure's method descriptor.
func methods(t *testing.T) map[string]protoreflect.MethodDescriptor {
	t.Helper()
	out := map[string]protoreflect.MethodDescriptor{}
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			for j := range s.Methods().Len() {
				m := s.Methods().Get(j)
				out["/"+string(s.FullName())+"/"+string(m.Name())] = m
			}
		}
		return true
	})
	if len(out) < 30 {
		t.Fatalf("found %d procedures: are the services registered?", len(out))
	}
	return out
}

// TestEveryProcedureHasARule checks that the table names every procedure,
// and nothing else.
func TestEveryProcedureHasARule(t *testing.T) {
	all := map[string]bool{}
	for _, p := range procedures(t) {
		all[p] = true
		r, ok := access.For(p)
		if !ok {
			t.Errorf("%s has no row in access.Table (and docs/roles.md)", p)
			continue
		}
		if r.Group == "" || r.Why == "" {
			t.Errorf("%s: a row needs a group and a why", p)
		}
		// A party rule finds its task in a string field of the request.
		if f := methods(t)[p].Input().Fields().ByName(protoreflect.Name(r.Field())); r.Parties != 0 && (f == nil || f.Kind() != protoreflect.StringKind) {
			t.Errorf("%s: its request has no string field %s to find the task's parties by", p, r.Field())
		}
	}
	for p := range access.Table {
		if !all[p] {
			t.Errorf("access.Table has a row for %s, which no service serves", p)
		}
	}
}

// TestRolesDoc checks docs/roles.md against the table: one row per
// procedure, each with the code's group and "who may call".
func TestRolesDoc(t *testing.T) {
	f, err := os.Open("../../docs/roles.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") || !strings.Contains(line, "Service/") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 5 {
			t.Errorf("docs/roles.md: %q has %d cells, want 5 (RPC, group, who, plane, why)", line, len(cells))
			continue
		}
		rpc := strings.Trim(cells[0], "`")
		procedure := "/steward.v1." + rpc
		if seen[procedure] {
			t.Errorf("docs/roles.md: %s has two rows", rpc)
		}
		seen[procedure] = true
		r, ok := access.For(procedure)
		if !ok {
			t.Errorf("docs/roles.md: %s is not in access.Table", rpc)
			continue
		}
		if cells[1] != string(r.Group) {
			t.Errorf("docs/roles.md: %s is in group %q; the code says %q", rpc, cells[1], r.Group)
		}
		if cells[2] != r.Who() {
			t.Errorf("docs/roles.md: %s may be called by %q; the code says %q", rpc, cells[2], r.Who())
		}
		if (cells[3] == "—") != (r.Plane == "") {
			t.Errorf("docs/roles.md: %s's plane check is %q; the code's is %q", rpc, cells[3], r.Plane)
		}
		if cells[4] == "" {
			t.Errorf("docs/roles.md: %s says not why", rpc)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procedures(t) {
		if !seen[p] {
			t.Errorf("docs/roles.md has no row for %s", strings.TrimPrefix(p, "/steward.v1."))
		}
	}
}
