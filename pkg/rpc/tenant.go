package rpc

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
)

// TenantFunc returns the tenant task taskID belongs to ("" the default
// tenant): the hook every plane's edge is given (taskstore.Tenant over the
// plane's log). A task that does not exist is errs.NotFound; a malformed
// id errs.Invalid.
type TenantFunc func(ctx context.Context, taskID string) (string, error)

// WithTenants has the edge answer NotFound, as for a task that does not
// exist (and for one that does not), to a caller whose request names a
// task of another tenant than its own: for every procedure whose request names a task (the role
// table's task field), before the role table, so that no role reaches
// across tenants. tenants is asked once per call. Without tokens (open
// mode) every caller is of the default tenant and nothing is checked.
func WithTenants(tenants TenantFunc) EdgeOption {
	return func(i *edgeInterceptor) { i.tenants = tenants }
}

// TaskNotFound is the answer for a task that does not exist, or is not
// the caller's tenant's: the same words, so that the answer tells another
// tenant nothing, not even that the id is taken.
func TaskNotFound(taskID string) error {
	return errs.New(errs.NotFound, "task %s not found", taskID)
}

// sameTenant refuses a request msg of procedure that names a task of
// another tenant than who's, or a task that does not exist: both are
// TaskNotFound, before the roles and the request's other fields are
// looked at, so that no answer tells the one from the other. An id that
// is not one is the handler's to answer, naming the field.
func (i *edgeInterceptor) sameTenant(ctx context.Context, procedure string, who Identity, msg any) error {
	if i.tenants == nil {
		return nil
	}
	rule, ok := access.For(procedure)
	m, isProto := msg.(proto.Message)
	if !ok || !isProto {
		return nil // authorize refuses a procedure without a row
	}
	taskID := stringField(m, rule.Field())
	if taskID == "" {
		return nil
	}
	tenant, err := i.tenants(ctx, taskID)
	switch {
	case errs.Is(err, errs.Invalid):
		return nil
	case errs.Is(err, errs.NotFound):
		return TaskNotFound(taskID)
	case err != nil:
		return err
	case tenant != who.Tenant:
		return TaskNotFound(taskID)
	}
	return nil
}
