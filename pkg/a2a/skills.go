package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Skill is one skill of the agent card and the contract template a task
// asked for under it gets.
type Skill struct {
	ID          string
	Name        string
	Description string
	Tags        []string
	Examples    []string
	// Agent is who works the tasks: each is delegated to it.
	Agent string
	// Contract is the template: owners, budget, risk tier, acceptance
	// criteria, tools. An empty requester_ref or accountable_owner_ref is
	// the caller's; intent is the caller's text after the template's.
	Contract *stewardv1.TaskContract
}

// skillsFile is the file's form: the skill's fields, its contract in the
// Connect API's JSON (protojson).
type skillsFile struct {
	Skills []struct {
		ID          string          `json:"id"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Tags        []string        `json:"tags"`
		Examples    []string        `json:"examples"`
		Agent       string          `json:"agent"`
		Contract    json.RawMessage `json:"contract"`
	} `json:"skills"`
}

var skillID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// LoadSkills reads the skills file at path. Unknown fields, in the file or
// in a contract, are refused, as are a skill without an id, name or agent,
// a repeated id, and a contract that sets what Steward assigns (task_id,
// parent_task_id, delegation_chain, credential_ref).
func LoadSkills(path string) ([]Skill, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f skillsFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Skills) == 0 {
		return nil, fmt.Errorf("%s: no skills", path)
	}
	seen := map[string]bool{}
	skills := make([]Skill, 0, len(f.Skills))
	for i, s := range f.Skills {
		at := fmt.Sprintf("%s: skills[%d]", path, i)
		switch {
		case !skillID.MatchString(s.ID):
			return nil, fmt.Errorf("%s.id: %q is not a skill id (lowercase letters, digits, '.', '_', '-')", at, s.ID)
		case seen[s.ID]:
			return nil, fmt.Errorf("%s.id: %q is named twice", at, s.ID)
		case s.Name == "":
			return nil, fmt.Errorf("%s.name: is required", at)
		case s.Agent == "":
			return nil, fmt.Errorf("%s.agent: is required: who works the skill's tasks", at)
		}
		seen[s.ID] = true
		k := &stewardv1.TaskContract{}
		if len(s.Contract) > 0 {
			if err := protojson.Unmarshal(s.Contract, k); err != nil {
				return nil, fmt.Errorf("%s.contract: %w", at, err)
			}
		}
		if k.TaskId != "" || k.ParentTaskId != "" || len(k.DelegationChain) > 0 || k.CredentialRef != "" {
			return nil, fmt.Errorf("%s.contract: sets what Steward assigns (task_id, parent_task_id, delegation_chain, credential_ref)", at)
		}
		skills = append(skills, Skill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples, Agent: s.Agent, Contract: k})
	}
	return skills, nil
}

// contractFor is the contract of a task asked for under s by caller with
// text: the template, its empty owners the caller's.
func (s Skill) contractFor(caller, text string) *stewardv1.TaskContract {
	k := proto.Clone(s.Contract).(*stewardv1.TaskContract)
	if k.RequesterRef == "" {
		k.RequesterRef = caller
	}
	if k.AccountableOwnerRef == "" {
		k.AccountableOwnerRef = caller
	}
	if k.Intent == "" {
		k.Intent = text
	} else {
		k.Intent += "\n\n" + text
	}
	return k
}

// holder is the context task's contract: the skill's without a budget,
// so that handing the skill's budget on to the task does not spend it
// (a context task with a budget would be suspended, its budget spent, as
// soon as it delegated it whole).
func holder(k *stewardv1.TaskContract) *stewardv1.TaskContract {
	h := proto.Clone(k).(*stewardv1.TaskContract)
	h.Budget = nil
	return h
}

// delegated is the sub-task's contract: the skill's, but for the deadline
// and objective, which are the context task's (an unset one inherits).
// Its budget is the skill's too, handed on from what the context has left.
func delegated(k *stewardv1.TaskContract) *stewardv1.TaskContract {
	sub := proto.Clone(k).(*stewardv1.TaskContract)
	sub.Deadline, sub.ObjectiveId = nil, ""
	return sub
}
