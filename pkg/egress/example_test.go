package egress_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/steward-run/steward/pkg/egress"
)

func ExampleRule() {
	rule := egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}})
	for _, url := range []string{"http://169.254.169.254/latest/meta-data/", "http://10.20.0.7:8080/call"} {
		fmt.Println(url, rule.CheckURL(context.Background(), url))
	}
	// Calls of tenants' tools go over connections that obey the rule.
	_ = &http.Client{Transport: rule.Transport()}
	// Output:
	// http://169.254.169.254/latest/meta-data/ 169.254.169.254 is a link-local address (169.254.0.0/16), where cloud metadata services answer: tenants' tools may not reach it (docs/tenants.md#tools)
	// http://10.20.0.7:8080/call <nil>
}
