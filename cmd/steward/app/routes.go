package app

import (
	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/state"
)

// PlaneRoute is one plane and the Connect services it serves.
type PlaneRoute struct {
	Plane    string
	Services []string
}

// PlaneRoutes is which plane serves which service, in the planes' order:
// the table `steward gateway` routes by. It is read off each plane's own
// Services, so that it cannot drift from what the planes serve: Services
// only builds handlers, and a plane is read only when a call comes, so an
// unstarted plane answers it.
func PlaneRoutes() []PlaneRoute {
	planes := []struct {
		name  string
		plane interface {
			Services([]connect.HandlerOption) []rpc.Service
		}
	}{
		{control.PlaneName, &control.Plane{}},
		{governance.PlaneName, &governance.Plane{}},
		{execution.PlaneName, &execution.Plane{}},
		{state.PlaneName, &state.Plane{}},
	}
	routes := make([]PlaneRoute, 0, len(planes))
	for _, p := range planes {
		r := PlaneRoute{Plane: p.name}
		for _, s := range p.plane.Services(nil) {
			r.Services = append(r.Services, s.Name)
		}
		routes = append(routes, r)
	}
	return routes
}
