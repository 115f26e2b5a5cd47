package stewardtest_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// A NodeConfig without Cluster is a single server: no cluster port, so
// JetStream runs standalone, as an embedded server does; with one, the
// node is clustered and solicits its routes.
func TestNodeConfigSingleOrClustered(t *testing.T) {
	single := stewardtest.NodeConfig{Name: "one", Client: "127.0.0.1:4222", StoreDir: t.TempDir()}
	o, err := single.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Cluster.Port != 0 || len(o.Routes) != 0 || !o.JetStream || o.Port != 4222 {
		t.Fatalf("single server: cluster port %d, routes %v, JetStream %v, client port %d", o.Cluster.Port, o.Routes, o.JetStream, o.Port)
	}
	clustered := single
	clustered.Cluster, clustered.Routes = "127.0.0.1:6222", []string{"nats-route://127.0.0.1:6223"}
	if o, err = clustered.Options(); err != nil {
		t.Fatal(err)
	}
	if o.Cluster.Port != 6222 || len(o.Routes) != 1 {
		t.Fatalf("clustered: cluster port %d, routes %v", o.Cluster.Port, o.Routes)
	}
}
