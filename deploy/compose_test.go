package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/steward-run/steward/pkg/natsusers"
)

// loadCompose loads a compose file with compose-go, with schema validation
// on: the compose-spec JSON schema rejects unknown keys. The environment is
// fixed so that the host's variables cannot change the result.
func loadCompose(t *testing.T, path string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithEnv([]string{}),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
	)
	if err != nil {
		return nil, err
	}
	return cli.ProjectFromOptions(context.Background(), opts)
}

func TestComposeStrictRejectsUnknownKeys(t *testing.T) {
	// Guards the strictness the other compose tests rely on: a misspelt
	// key must fail to load, not be dropped.
	bad := filepath.Join(t.TempDir(), "compose.yml")
	src := "services:\n  nats:\n    image: nats:2.12-alpine\n    comand: [\"-js\"]\n"
	if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadCompose(t, bad); err == nil {
		t.Fatal("compose file with unknown key `comand` loaded without error; loading is not strict")
	}
}

// loadRepoCompose loads the repository's docker-compose.yml (loadCompose)
// and returns it with its absolute path.
func loadRepoCompose(t *testing.T) (*types.Project, string) {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(t, path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return p, path
}

func TestCompose(t *testing.T) {
	p, path := loadRepoCompose(t)

	names := p.ServiceNames()
	sort.Strings(names)
	want := append(append([]string{"nats-users", "permit-key", secretKeyJob, "gateway"}, composeNATS...), planes...)
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Fatalf("services = %v, want %v", names, want)
	}

	for _, node := range composeNATS {
		t.Run(node, func(t *testing.T) { checkComposeNATSNode(t, p, node) })
	}

	t.Run("gateway", func(t *testing.T) { checkComposeGateway(t, p) })
	var builders int
	for _, name := range planes {
		t.Run(name, func(t *testing.T) {
			s, err := p.GetService(name)
			if err != nil {
				t.Fatal(err)
			}
			cmd := []string(s.Command)
			if len(cmd) == 0 || cmd[0] != "serve" {
				t.Errorf("command %q does not start with serve", cmd)
			}
			for _, arg := range []string{"--plane=" + name, "--nats=" + composeNATSURL, "--replicas=3", fmt.Sprintf("--addr=0.0.0.0:%d", planePort)} {
				if !slices.Contains(cmd, arg) {
					t.Errorf("command %q lacks %s", cmd, arg)
				}
			}
			if want := releaseImage(t); s.Image != want {
				t.Errorf("image = %q, want %s (one image for every plane)", s.Image, want)
			}
			if s.Build != nil {
				builders++
				if s.Build.Context != filepath.Dir(path) {
					t.Errorf("build context = %q, want the repository root %q", s.Build.Context, filepath.Dir(path))
				}
			}
			for _, node := range composeNATS {
				if dep, ok := s.DependsOn[node]; !ok || dep.Condition != types.ServiceConditionHealthy {
					t.Errorf("depends_on = %v, want %s: %s", s.DependsOn, node, types.ServiceConditionHealthy)
				}
			}
			if s.Restart != types.RestartPolicyUnlessStopped {
				t.Errorf("restart = %q, want %q", s.Restart, types.RestartPolicyUnlessStopped)
			}
			if name == "governance" {
				checkComposeCredentialKey(t, p, s)
			}
			if name == "execution" {
				checkComposePermitKey(t, p, s)
			}
			checkComposeSeed(t, name, s)
			if len(s.Ports) != 0 {
				t.Errorf("ports = %+v, want none published: the gateway is the one address", s.Ports)
			}
		})
	}
	if builders != 1 {
		t.Errorf("%d plane services have build:, want exactly 1 building the image for all", builders)
	}
}

// composeNATS are the compose services of the three NATS nodes, and
// composeNATSURL the planes' --nats: every node, so that a plane reaches
// the cluster while any one node is down.
var composeNATS = []string{"nats-1", "nats-2", "nats-3"}

const composeNATSURL = "nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222"

// checkComposeNATSNode checks one node of the compose NATS cluster: JetStream
// on a volume of its own, a name of its own, routes to every node, the
// planes' users, and a healthcheck on the monitoring port.
func checkComposeNATSNode(t *testing.T, p *types.Project, node string) {
	t.Helper()
	nats, _ := p.GetService(node)
	if !strings.HasPrefix(nats.Image, "nats:2.12") {
		t.Errorf("image = %q, want nats:2.12*", nats.Image)
	}
	cmd := []string(nats.Command)
	opts, err := natsOptions(withoutConfig(cmd))
	if err != nil {
		t.Fatalf("command %q: %v", cmd, err)
	}
	if !opts.JetStream || opts.StoreDir == "" {
		t.Fatalf("command %q does not enable JetStream (-js) with a store dir (-sd)", cmd)
	}
	if opts.ServerName != node || opts.Cluster.Name == "" || opts.Cluster.Port == 0 {
		t.Errorf("command %q: server name %q, cluster %q port %d; want the node's name and a named cluster", cmd, opts.ServerName, opts.Cluster.Name, opts.Cluster.Port)
	}
	var routes, want []string
	for _, r := range opts.Routes {
		routes = append(routes, r.Host)
	}
	for _, n := range composeNATS {
		want = append(want, fmt.Sprintf("%s:%d", n, opts.Cluster.Port))
	}
	if !slices.Equal(routes, want) {
		t.Errorf("routes %v, want every node %v", routes, want)
	}
	var mounted bool
	for _, v := range nats.Volumes {
		if v.Target != opts.StoreDir {
			continue
		}
		mounted = true
		if v.Type != types.VolumeTypeVolume || v.Source != "nats-data-"+strings.TrimPrefix(node, "nats-") {
			t.Errorf("store dir %s is %s %q, want the named volume of this node alone", opts.StoreDir, v.Type, v.Source)
		}
		if _, ok := p.Volumes[v.Source]; !ok {
			t.Errorf("volume %q is not declared under top-level volumes", v.Source)
		}
	}
	if !mounted {
		t.Errorf("store dir %s has no volume mounted", opts.StoreDir)
	}
	checkComposeNATSUsers(t, p, nats)
	if nats.HealthCheck == nil || nats.HealthCheck.Disable || len(nats.HealthCheck.Test) == 0 {
		t.Fatal("no healthcheck; planes depend on it being healthy")
	}
	if test := strings.Join(nats.HealthCheck.Test, " "); !strings.Contains(test, "8222/healthz") {
		t.Errorf("healthcheck %q does not query the monitoring /healthz", test)
	} else if opts.HTTPPort != 8222 {
		t.Errorf("healthcheck uses port 8222 but command %q does not serve monitoring there (-m 8222)", cmd)
	}
}

// checkComposeCredentialKey checks that governance keeps its credential
// signing key on a named volume, so that a recreated container signs with
// the same key.
func checkComposeCredentialKey(t *testing.T, p *types.Project, s types.ServiceConfig) {
	t.Helper()
	path := flagValue(s.Command, "--credential-key")
	if path == "" {
		t.Fatalf("governance command %q sets no --credential-key", s.Command)
	}
	dir := filepath.Dir(path)
	for _, v := range s.Volumes {
		if v.Target != dir {
			continue
		}
		if v.Type != types.VolumeTypeVolume {
			t.Errorf("governance %s is a %s mount, want a named volume", dir, v.Type)
		}
		if _, ok := p.Volumes[v.Source]; !ok {
			t.Errorf("governance volume %q is not declared under top-level volumes", v.Source)
		}
		return
	}
	t.Errorf("--credential-key %s: no volume is mounted at %s", path, dir)
}

// natsUsersVolume is the compose volume nats-users writes the NATS users
// into: DIR/nats/users.conf and DIR/<plane>/nats.nk.
const natsUsersVolume = "nats-users"

// checkComposeNATSUsers checks that the nats-users job writes the users
// into their volume before nats starts, and that nats runs with the
// rendered users as its config, mounted alone from that volume.
func checkComposeNATSUsers(t *testing.T, p *types.Project, nats types.ServiceConfig) {
	t.Helper()
	job, err := p.GetService("nats-users")
	if err != nil {
		t.Fatal(err)
	}
	out := flagValue(job.Command, "--out")
	if len(job.Command) == 0 || job.Command[0] != "nats-users" || out == "" {
		t.Fatalf("nats-users command %q is not nats-users --out=DIR", job.Command)
	}
	if want := releaseImage(t); job.Image != want || job.Restart != "no" {
		t.Errorf("nats-users: image %q restart %q, want %s run once (restart no)", job.Image, job.Restart, want)
	}
	if !slices.ContainsFunc(job.Volumes, func(v types.ServiceVolumeConfig) bool {
		return v.Source == natsUsersVolume && v.Target == out && (v.Volume == nil || v.Volume.Subpath == "")
	}) {
		t.Errorf("nats-users writes to %s, where volume %s is not mounted whole", out, natsUsersVolume)
	}
	if _, ok := p.Volumes[natsUsersVolume]; !ok {
		t.Errorf("volume %s is not declared under top-level volumes", natsUsersVolume)
	}
	if dep, ok := nats.DependsOn["nats-users"]; !ok || dep.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("nats depends_on = %v, want nats-users: %s", nats.DependsOn, types.ServiceConditionCompletedSuccessfully)
	}
	conf := flagValue(nats.Command, "-c", "--config")
	if conf == "" {
		t.Fatalf("nats command %q reads no config (-c): it would take any client", nats.Command)
	}
	if filepath.Base(conf) != natsusers.ConfigFile {
		t.Errorf("nats config %s is not the rendered %s", conf, natsusers.ConfigFile)
	}
	checkComposeMountsOnly(t, nats.Name, nats, filepath.Dir(conf), natsusers.ConfigDir)
	checkAuthorization(t)
}

// checkComposeSeed checks that a plane passes --nats-nkey and mounts its
// own seed, and no other plane's.
func checkComposeSeed(t *testing.T, plane string, s types.ServiceConfig) {
	t.Helper()
	seed := flagValue(s.Command, "--nats-nkey")
	if seed == "" {
		t.Fatalf("command %q passes no --nats-nkey: the plane would connect as no user", s.Command)
	}
	if filepath.Base(seed) != natsusers.SeedFile {
		t.Errorf("--nats-nkey %s is not the %s nats-users writes", seed, natsusers.SeedFile)
	}
	checkComposeMountsOnly(t, plane, s, filepath.Dir(seed), plane)
}

// checkComposeMountsOnly checks that service s mounts the nats-users
// volume exactly once, read-only, at dir, and only its subpath sub.
func checkComposeMountsOnly(t *testing.T, name string, s types.ServiceConfig, dir, sub string) {
	t.Helper()
	var n int
	for _, v := range s.Volumes {
		if v.Source != natsUsersVolume {
			continue
		}
		n++
		if v.Target != dir || !v.ReadOnly || v.Volume == nil || v.Volume.Subpath != sub {
			t.Errorf("%s mounts %s at %s (read-only %v, %+v); want only its subpath %s, read-only, at %s", name, natsUsersVolume, v.Target, v.ReadOnly, v.Volume, sub, dir)
		}
	}
	if n != 1 {
		t.Errorf("%s mounts volume %s %d times, want once (subpath %s at %s)", name, natsUsersVolume, n, sub, dir)
	}
}

// checkComposePermitKey checks that execution verifies permits against
// governance's public key, fetched by the permit-key job into a volume of
// its own, and never sees the credential key's volume.
func checkComposePermitKey(t *testing.T, p *types.Project, s types.ServiceConfig) {
	t.Helper()
	path := flagValue(s.Command, "--permit-key")
	if path == "" {
		t.Fatalf("execution command %q passes no --permit-key: permits would not be verified", s.Command)
	}
	job, err := p.GetService("permit-key")
	if err != nil {
		t.Fatal(err)
	}
	out := flagValue(job.Command, "--out")
	if len(job.Command) < 2 || job.Command[0] != "audit" || job.Command[1] != "key" || out == "" || flagValue(job.Command, "--wait") == "" {
		t.Fatalf("permit-key command %q is not audit key --out=FILE --wait=DURATION", job.Command)
	}
	if filepath.Base(out) != filepath.Base(path) {
		t.Errorf("permit-key writes %s, execution reads %s", filepath.Base(out), filepath.Base(path))
	}
	volumeAt := func(s types.ServiceConfig, dir string) string {
		for _, v := range s.Volumes {
			if v.Target == dir {
				return v.Source
			}
		}
		return ""
	}
	src := volumeAt(job, filepath.Dir(out))
	if src == "" || src == volumeAt(s, "") {
		t.Fatalf("permit-key mounts no volume at %s", filepath.Dir(out))
	}
	if got := volumeAt(s, filepath.Dir(path)); got != src {
		t.Errorf("execution mounts %q at %s, want the permit-key job's volume %q", got, filepath.Dir(path), src)
	}
	if dep, ok := s.DependsOn["permit-key"]; !ok || dep.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("execution depends_on = %v, want permit-key: %s", s.DependsOn, types.ServiceConditionCompletedSuccessfully)
	}
	gov, _ := p.GetService("governance")
	cred := volumeAt(gov, filepath.Dir(flagValue(gov.Command, "--credential-key")))
	for _, svc := range []types.ServiceConfig{s, job} {
		for _, v := range svc.Volumes {
			if v.Source == cred {
				t.Errorf("%s mounts governance's credential key volume %s: the private key must stay with governance", svc.Name, cred)
			}
		}
	}
}

// flagValue returns the value after the first of names in args ("-x v" or
// "-x=v"), or "".
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

// checkComposeGateway: the gateway is the one published address, on this
// machine only (the planes run --insecure: anyone who reaches it acts as
// anyone, and Docker binds every interface otherwise, past the host's
// firewall), and it names every plane's service.
func checkComposeGateway(t *testing.T, p *types.Project) {
	s, err := p.GetService("gateway")
	if err != nil {
		t.Fatal(err)
	}
	cmd := []string(s.Command)
	if len(cmd) == 0 || cmd[0] != "gateway" {
		t.Errorf("command %q does not start with gateway", cmd)
	}
	for _, plane := range planes {
		if got, want := flagValue(cmd, "--"+plane), fmt.Sprintf("http://%s:%d", plane, planePort); got != want {
			t.Errorf("--%s = %q, want %q", plane, got, want)
		}
	}
	if len(s.Ports) != 1 || s.Ports[0].Published != "7700" || s.Ports[0].Target != planePort || s.Ports[0].HostIP != "127.0.0.1" {
		t.Errorf("ports = %+v, want 127.0.0.1:7700:%d only", s.Ports, planePort)
	}
	if !s.ReadOnly {
		t.Error("read_only is false: the gateway writes nothing")
	}
}
