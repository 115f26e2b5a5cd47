package state_test

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestReceiptShowsContextAndInputs builds the receipt of a task whose
// contract pins inputs and context: the JSON receipt carries them as the
// contract has them, and the Markdown lists each, inputs first, with its
// version and digest, escaped where the text could break a table. A task
// that names none says so.
func TestReceiptShowsContextAndInputs(t *testing.T) {
	env := stewardtest.NewEnv(t)
	digest := "sha256:" + strings.Repeat("0f", 32)
	k := contract(1)
	k.InputSnapshot = &stewardv1.InputSnapshot{Version: "inputs-v7", Inputs: []*stewardv1.ContextRef{
		{Uri: "postgres://warehouse/incidents", Version: "2026-11-30", Digest: digest},
	}}
	k.ContextRefs = []*stewardv1.ContextRef{
		{Uri: "s3://kb/runbooks/oncall.md", Version: "v12", Digest: digest},
		{Uri: "https://wiki.example/a|b"},
	}
	env.Append("ctx", &stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{})
	env.Append("bare", &stewardv1.TaskCreated{Contract: contract(2)}, &stewardv1.TaskStarted{})
	q, _ := serveState(t, env)

	got := getReceipt(t, q, "ctx")
	r := got.Receipt
	if len(r.Inputs) != 1 || !proto.Equal(r.Inputs[0], k.InputSnapshot.Inputs[0]) || len(r.ContextRefs) != 2 ||
		!proto.Equal(r.ContextRefs[0], k.ContextRefs[0]) || !proto.Equal(r.ContextRefs[1], k.ContextRefs[1]) {
		t.Errorf("receipt inputs %v and context %v, want the contract's %v and %v", r.Inputs, r.ContextRefs, k.InputSnapshot.Inputs, k.ContextRefs)
	}
	js, err := protojson.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// Machines read the refs under the proto's JSON names.
	var asJSON struct {
		ContextRefs []map[string]string `json:"contextRefs"`
		Inputs      []map[string]string `json:"inputs"`
	}
	if err := json.Unmarshal(js, &asJSON); err != nil {
		t.Fatal(err)
	}
	if len(asJSON.ContextRefs) != 2 || asJSON.ContextRefs[0]["uri"] != "s3://kb/runbooks/oncall.md" || asJSON.ContextRefs[0]["digest"] != digest ||
		len(asJSON.Inputs) != 1 || asJSON.Inputs[0]["version"] != "2026-11-30" {
		t.Errorf("the JSON receipt carries context %v and inputs %v:\n%s", asJSON.ContextRefs, asJSON.Inputs, js)
	}
	md := got.Markdown
	t.Logf("\n%s", md)
	for _, want := range []string{
		"## Context and inputs",
		"| input | `postgres://warehouse/incidents` | `2026-11-30` | `" + digest + "` |\n" +
			"| context | `s3://kb/runbooks/oncall.md` | `v12` | `" + digest + "` |\n" +
			"| context | `https://wiki.example/a\\|b` | — | — |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown does not say %q", want)
		}
	}
	checkTables(t, md)

	if md := getReceipt(t, q, "bare").Markdown; !strings.Contains(md, "## Context and inputs\n\nThe contract names no inputs and no context.\n") {
		t.Errorf("a task without context refs:\n%s", md)
	}
}
