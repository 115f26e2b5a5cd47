package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// clusterBase is a three-node JetStream cluster, each node a process of its
// own that a test may kill (stewardtest.ClusterProcesses), with what every
// plane on it shares: the planes' NATS users (`steward nats-users`) and
// governance's credential key. The planes are started on it one by one
// (startPlane), and may be started anew on the same cluster: a test that
// runs several deployments in turn pays for the nodes once.
type clusterBase struct {
	cluster *stewardtest.Cluster
	dir     string
	users   string
	// auth is the flags every plane takes for its callers: --insecure, or
	// --auth FILE.
	auth []string
	// token is a bearer token for the CLI, "" in open mode.
	token string
}

const (
	clusterAdmin    = "e2e-admin"
	clusterPassword = "e2e-admin-password-0123456789"
)

// startClusterBase starts the cluster, its nodes taking the planes' NATS
// users; its planes are in open mode (--insecure) until withTokens.
func startClusterBase(t *testing.T) *clusterBase {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, "nats-users")
	run(t, 0, "nats-users", "--out", users)
	return &clusterBase{
		cluster: stewardtest.StartCluster(t, 3,
			stewardtest.ClusterConfigFile(filepath.Join(users, "nats", "users.conf")),
			stewardtest.ClusterAdmin(clusterAdmin, clusterPassword),
			stewardtest.ClusterProcesses()),
		dir:   dir,
		users: users,
		auth:  []string{"--insecure"},
	}
}

// devIdentities are the principals and roles of the token file `steward
// dev` writes on first start (cmd/steward/app/tokens.go), which the
// examples read: an admin, the agent, an approver and an operator.
var devIdentities = []struct{ principal, roles string }{
	{"user:admin", `["admin"]`},
	{"agent:dev", `[]`},
	{"user:approver", `["authorizer"]`},
	{"user:operator", `["operator"]`},
}

// withTokens makes the planes started from now on take bearer tokens from
// a token file in data, as `steward dev` writes it there: the examples
// read their tokens from it. It returns the file's path.
func (b *clusterBase) withTokens(t *testing.T, data string) string {
	t.Helper()
	var entries []string
	for i, id := range devIdentities {
		token := fmt.Sprintf("e2e-cluster-token-%d-%s", i, strings.NewReplacer(":", "-").Replace(id.principal))
		if id.principal == "user:admin" {
			b.token = token
		}
		entries = append(entries, fmt.Sprintf(`{"token": %q, "principal": %q, "roles": %s}`, token, id.principal, id.roles))
	}
	path := filepath.Join(data, "tokens.json")
	if err := os.WriteFile(path, []byte(`{"tokens": [`+strings.Join(entries, ",\n")+"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.auth = []string{"--auth", path}
	return path
}

// startPlane starts plane as the real binary in services mode (`steward
// serve --replicas 3`) against node, signed in as the plane's NATS user,
// with env added to its environment and args to its flags. Governance
// signs with the base's one credential key; execution checks permits with
// its public key, fetched from governance, which must be running (at
// governanceURL) the first time an execution plane starts.
func (b *clusterBase) startPlane(t *testing.T, plane string, node int, governanceURL string, env []string, args ...string) *proc {
	t.Helper()
	return b.startPlaneOf(t, binary, plane, node, governanceURL, env, args...)
}

// startPlaneOf is startPlane of the binary at bin: a rolling upgrade's
// earlier build.
func (b *clusterBase) startPlaneOf(t *testing.T, bin, plane string, node int, governanceURL string, env []string, args ...string) *proc {
	t.Helper()
	flags := []string{"serve", "--plane", plane, "--nats", b.cluster.ClientURL(node), "--replicas", "3",
		"--addr", "127.0.0.1:0", "--log-level", "warn",
		"--nats-nkey", filepath.Join(b.users, plane, "nats.nk")}
	flags = append(flags, b.auth...)
	switch plane {
	case "governance":
		flags = append(flags, "--credential-key", filepath.Join(b.dir, "credential.key"))
	case "execution":
		flags = append(flags, "--permit-key", b.permitKey(t, governanceURL))
	}
	return startCommandOf(t, bin, env, append(flags, args...)...)
}

// permitKey returns the file of governance's public key, fetching it the
// first time as compose's permit-key job does.
func (b *clusterBase) permitKey(t *testing.T, governanceURL string) string {
	t.Helper()
	key := filepath.Join(b.dir, "credential.pub")
	if _, err := os.Stat(key); err == nil {
		return key
	}
	args := []string{"audit", "key", "--addr", strings.TrimPrefix(governanceURL, "http://"), "--out", key}
	if b.token != "" {
		args = append(args, "--token", b.token)
	}
	run(t, 0, args...)
	return key
}
