package app

import (
	"flag"
	"fmt"

	"github.com/steward-run/steward/services/control"
)

// QuotaFlags are the control plane's quotas (docs/quotas.md).
type QuotaFlags struct{ control.Quotas }

// quotaFlag is one quota's flag: its name, where it is kept, and what it
// bounds, for the help text.
type quotaFlag struct {
	name string
	v    *int64
	def  int64
	what string
}

func (f *QuotaFlags) flags() []quotaFlag {
	d := control.DefaultQuotas
	return []quotaFlag{
		{"quota-running-tasks-per-principal", &f.RunningTasksPerPrincipal, d.RunningTasksPerPrincipal, "tasks not ended that one principal created (CreateTask, DelegateTask)"},
		{"quota-running-tasks-per-tenant", &f.RunningTasksPerTenant, d.RunningTasksPerTenant, "tasks not ended in one tenant"},
		{"quota-plan-bytes-per-principal", &f.PlanBytesPerPrincipal, d.PlanBytesPerPrincipal, "bytes of the current plans of one principal's running tasks (SubmitPlan)"},
		{"quota-plan-bytes-per-tenant", &f.PlanBytesPerTenant, d.PlanBytesPerTenant, "bytes of the current plans of one tenant's running tasks"},
		{"quota-content-bytes-per-principal", &f.ContentBytesPerPrincipal, d.ContentBytesPerPrincipal, "bytes of artifact content one principal has added to Steward's store, ever (SubmitArtifact)"},
		{"quota-content-bytes-per-tenant", &f.ContentBytesPerTenant, d.ContentBytesPerTenant, "bytes of artifact content one tenant has added to Steward's store, ever"},
	}
}

func (f *QuotaFlags) register(fs *flag.FlagSet) {
	for _, q := range f.flags() {
		fs.Int64Var(q.v, q.name, q.def, "the most `N` "+q.what+"; past it the request is refused resource_exhausted (control plane; see docs/quotas.md)")
	}
}

func (f *QuotaFlags) check() error {
	for _, q := range f.flags() {
		if *q.v < 1 {
			return fmt.Errorf("--%s: %d is not a positive number", q.name, *q.v)
		}
	}
	return nil
}
