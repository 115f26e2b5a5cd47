package rpc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
)

// PartiesFunc returns who plays each part in the task taskID: the hook a
// plane that serves procedures with party rules provides (the control
// plane). An errs.NotFound is the edge's answer to a caller whose roles
// were not enough; an errs.Invalid id lets the call through, for the
// command to name the field.
type PartiesFunc func(ctx context.Context, taskID string) (access.TaskParties, error)

// authorize applies access.Table's rule for procedure to who, for an
// authenticated caller: the roles first, then, when they are not enough
// and the rule names parties, the task msg names, through parties. msg is
// nil for a stream, whose request is checked as it arrives (partyConn).
func authorize(ctx context.Context, parties PartiesFunc, procedure string, who Identity, msg any) error {
	rule, ok := access.For(procedure)
	if !ok {
		// Fail closed: a procedure nobody wrote a rule for is nobody's.
		return errs.New(errs.PermissionDenied, "%s has no row in the role table (docs/roles.md): nobody may call it", short(procedure))
	}
	if rule.AllowsRoles(who.Roles) || planeDecides(rule, msg) {
		return nil
	}
	if rule.Parties == 0 {
		return errs.New(errs.PermissionDenied, "%s may not call %s: that needs %s", who.Principal, short(procedure), rule.Needs())
	}
	if msg == nil {
		return nil // checked on Receive
	}
	return authorizeParty(ctx, parties, procedure, rule, who, msg)
}

// authorizeParty checks a caller whose roles were not enough against the
// parties of the task the request names.
func authorizeParty(ctx context.Context, parties PartiesFunc, procedure string, rule access.Rule, who Identity, msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return fmt.Errorf("%s: request %T is not a protobuf message", procedure, msg)
	}
	taskID := stringField(m, rule.Field())
	if taskID == "" {
		return nil // the command reports the missing field
	}
	if parties == nil {
		return fmt.Errorf("%s: this server has no party hook", procedure)
	}
	p, err := parties(ctx, taskID)
	switch {
	case errs.Is(err, errs.Invalid):
		return nil // names no task: the command reports the field
	case err != nil:
		// NotFound among them: passing the call on for the command to
		// report would let it act on a task created between this read and
		// the command's own.
		return err
	case rule.AllowsParty(who.Principal, who.Roles, p):
		return nil
	}
	return errs.New(errs.PermissionDenied, "%s may not call %s on task %s: that needs %s%s",
		who.Principal, short(procedure), taskID, rule.Needs(), named(rule, p))
}

// named lists the principals that play the rule's parts in a task, for a
// refusal: "(here agent:lead, user:ann)".
func named(rule access.Rule, p access.TaskParties) string {
	var who []string
	add := func(names []string) {
		for _, n := range names {
			if n != "" && !slices.Contains(who, n) {
				who = append(who, n)
			}
		}
	}
	if rule.Parties&access.Agent != 0 {
		add(p.Agents)
	}
	if rule.Parties&access.Owner != 0 {
		add(p.Owners)
	}
	if rule.Parties&access.Backup != 0 {
		add([]string{p.Backup})
	}
	if len(who) == 0 {
		return ""
	}
	return " (here " + strings.Join(who, ", ") + ")"
}

// stringField returns m's string field name, or "".
func stringField(m proto.Message, name string) string {
	r := m.ProtoReflect()
	f := r.Descriptor().Fields().ByName(protoreflect.Name(name))
	if f == nil || f.Kind() != protoreflect.StringKind || f.IsList() {
		return ""
	}
	return r.Get(f).String()
}

// planeDecides reports whether msg sets the rule's PlaneField, which
// leaves the roles to the plane.
func planeDecides(rule access.Rule, msg any) bool {
	m, ok := msg.(proto.Message)
	return ok && rule.PlaneField != "" && stringField(m, rule.PlaneField) != ""
}

// short turns "/steward.v1.TaskService/PauseTask" into "TaskService/PauseTask".
func short(procedure string) string {
	return strings.TrimPrefix(procedure, "/steward.v1.")
}

// checkedConn checks a streamed request as it arrives, with check: the
// request's task is known only then.
type checkedConn struct {
	connect.StreamingHandlerConn
	check func(m any) error
}

func (c checkedConn) Receive(m any) error {
	if err := c.StreamingHandlerConn.Receive(m); err != nil {
		return err
	}
	return c.check(m)
}
