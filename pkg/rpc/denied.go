package rpc

import "github.com/prometheus/client_golang/prometheus"

// NewDeniedCounter returns steward_rpc_denied_total{procedure,code}, the
// count of calls the edge refused, unauthenticated or permission_denied,
// for a process to register in its registry and hand to WithDenied. The
// procedure is one the server serves (Connect routes nothing else to the
// interceptor), so the labels stay few.
func NewDeniedCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "steward_rpc_denied_total",
		Help: "Calls refused at the RPC edge: no valid bearer token (code unauthenticated) or the role table refused the caller (code permission_denied).",
	}, []string{"procedure", "code"})
}
