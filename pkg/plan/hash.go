package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Hash returns the plan's hash, hex SHA-256 of "steward.plan.v1", a NUL
// byte and the plan's canonical JSON: what an approval of the whole plan
// binds to. A revision, however small, has another hash and needs another
// approval.
//
// Canonical JSON is protojson with proto field names and enum names, then
// re-encoded as pkg/action encodes a request (keys sorted, no
// whitespace, shortest numbers), because protojson's own output is
// deliberately unstable and proto's binary form is not canonical
// across implementations. Unset fields are left out, so a field added to
// the format later does not change the hash of a plan that leaves it unset.
// An unset on_failure is hashed as the escalate it reads as (withDefaults),
// so the two spellings of one plan are one plan.
func Hash(p *stewardv1.Plan) (string, error) {
	c, err := canonical(p)
	if err != nil {
		return "", fmt.Errorf("plan hash: %w", err)
	}
	h := sha256.New()
	h.Write([]byte("steward.plan.v1\x00"))
	h.Write(c)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// canonical returns m's canonical JSON (see Hash).
func canonical(m proto.Message) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(withDefaults(m))
	if err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return action.CanonicalJSON(v)
}

// withDefaults returns m, a plan or a step, with each step's unset
// on_failure set to the ON_FAILURE_ESCALATE it reads as: a copy where one
// is unset, m itself otherwise.
func withDefaults(m proto.Message) proto.Message {
	unset := func(s *stewardv1.Step) bool { return s.GetOnFailure() == stewardv1.OnFailure_ON_FAILURE_UNSPECIFIED }
	var steps []*stewardv1.Step
	switch v := m.(type) {
	case *stewardv1.Plan:
		if !slices.ContainsFunc(v.GetSteps(), unset) {
			return m
		}
		c := proto.Clone(v).(*stewardv1.Plan)
		m, steps = c, c.Steps
	case *stewardv1.Step:
		if !unset(v) {
			return m
		}
		c := proto.Clone(v).(*stewardv1.Step)
		m, steps = c, []*stewardv1.Step{c}
	}
	for _, s := range steps {
		if unset(s) {
			s.OnFailure = stewardv1.OnFailure_ON_FAILURE_ESCALATE
		}
	}
	return m
}
