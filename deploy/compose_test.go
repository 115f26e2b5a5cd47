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

func TestCompose(t *testing.T) {
	path, err := filepath.Abs(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadCompose(t, path)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}

	names := p.ServiceNames()
	sort.Strings(names)
	want := append([]string{"nats"}, planes...)
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Fatalf("services = %v, want %v", names, want)
	}

	t.Run("nats", func(t *testing.T) {
		nats, _ := p.GetService("nats")
		if !strings.HasPrefix(nats.Image, "nats:2.12") {
			t.Errorf("nats image = %q, want nats:2.12*", nats.Image)
		}
		cmd := []string(nats.Command)
		if !slices.Contains(cmd, "-js") && !slices.Contains(cmd, "--jetstream") {
			t.Errorf("nats command %q does not enable JetStream (-js)", cmd)
		}
		sd := flagValue(cmd, "-sd", "--store_dir")
		if sd == "" {
			t.Fatalf("nats command %q sets no JetStream store dir (-sd)", cmd)
		}
		var mounted bool
		for _, v := range nats.Volumes {
			if v.Target == sd {
				mounted = true
				if v.Type != types.VolumeTypeVolume {
					t.Errorf("nats %s is a %s mount, want a named volume", sd, v.Type)
				}
				if _, ok := p.Volumes[v.Source]; !ok {
					t.Errorf("nats volume %q is not declared under top-level volumes", v.Source)
				}
			}
		}
		if !mounted {
			t.Errorf("nats store dir %s has no volume mounted", sd)
		}
		if nats.HealthCheck == nil || nats.HealthCheck.Disable || len(nats.HealthCheck.Test) == 0 {
			t.Fatal("nats has no healthcheck; planes depend on it being healthy")
		}
		if test := strings.Join(nats.HealthCheck.Test, " "); !strings.Contains(test, "8222/healthz") {
			t.Errorf("nats healthcheck %q does not query the monitoring /healthz", test)
		} else if flagValue(cmd, "-m", "--http_port") != "8222" {
			t.Errorf("nats healthcheck uses port 8222 but command %q does not serve monitoring there (-m 8222)", cmd)
		}
	})

	published := map[string]string{"control": "7701", "state": "7702"}
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
			for _, arg := range []string{"--plane=" + name, "--nats=" + natsURL, fmt.Sprintf("--addr=0.0.0.0:%d", planePort)} {
				if !slices.Contains(cmd, arg) {
					t.Errorf("command %q lacks %s", cmd, arg)
				}
			}
			if s.Image != "steward:dev" {
				t.Errorf("image = %q, want steward:dev (one image for every plane)", s.Image)
			}
			if s.Build != nil {
				builders++
				if s.Build.Context != filepath.Dir(path) {
					t.Errorf("build context = %q, want the repository root %q", s.Build.Context, filepath.Dir(path))
				}
			}
			dep, ok := s.DependsOn["nats"]
			if !ok {
				t.Fatalf("does not depend on nats (depends_on = %v)", s.DependsOn)
			}
			if dep.Condition != types.ServiceConditionHealthy {
				t.Errorf("depends_on nats condition = %q, want %q", dep.Condition, types.ServiceConditionHealthy)
			}
			if s.Restart != types.RestartPolicyUnlessStopped {
				t.Errorf("restart = %q, want %q", s.Restart, types.RestartPolicyUnlessStopped)
			}
			if name == "governance" {
				checkComposeCredentialKey(t, p, s)
			}
			wantPub, wantsPort := published[name]
			if !wantsPort {
				if len(s.Ports) != 0 {
					t.Errorf("ports = %+v, want none published", s.Ports)
				}
				return
			}
			if len(s.Ports) != 1 || s.Ports[0].Published != wantPub || s.Ports[0].Target != planePort {
				t.Errorf("ports = %+v, want %s:%d", s.Ports, wantPub, planePort)
			}
		})
	}
	if builders != 1 {
		t.Errorf("%d plane services have build:, want exactly 1 building steward:dev for all", builders)
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
