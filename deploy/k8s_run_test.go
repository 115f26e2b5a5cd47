package deploy_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	corev1 "k8s.io/api/core/v1"

	"github.com/steward-run/steward/pkg/natsusers"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestManifestsRun runs every container of the prod overlay as Kubernetes
// would, short of a cluster: NATS as three servers from the StatefulSet's
// own args (routes and all), each plane as the real binary with its
// container's args and environment ($(VAR) resolved as the kubelet does),
// its volume mounts as directories (Secrets filled and read-only,
// emptyDirs writable), its working directory, HOME and TMPDIR on a
// read-only "root", and the cluster's names mapped to loopback ports. Each
// must become ready on its readiness probe's path, serve /metrics only on
// its metrics port, and write nothing outside its writable mounts.
func TestManifestsRun(t *testing.T) {
	m := loadManifests(t, "prod")
	bin := buildSteward(t)
	secrets := secretFixtures(t, bin)
	c := newCluster(t, m)
	c.startNATS(t, secrets)
	var runs []*containerRun
	for _, name := range workloads {
		runs = append(runs, c.start(t, bin, name, secrets))
	}
	for _, r := range runs {
		t.Run(r.pod, func(t *testing.T) { r.checkReady(t) })
	}
	t.Run("dev runs what prod runs", func(t *testing.T) {
		dev := loadManifests(t, "dev")
		for _, name := range append(slices.Clone(workloads), "nats") {
			_, d, _ := dev.workload(name)
			_, p, _ := m.workload(name)
			dc, pc := d.Spec.Containers[0], p.Spec.Containers[0]
			if !slices.Equal(dc.Args, pc.Args) || !reflect.DeepEqual(dc.VolumeMounts, pc.VolumeMounts) || !reflect.DeepEqual(d.Spec.Volumes, p.Spec.Volumes) {
				t.Errorf("%s: dev's container differs from prod's in args, mounts or volumes; only replicas and resources may differ", name)
			}
		}
	})
}

// buildSteward builds the binary once for the test.
func buildSteward(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "steward")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/steward").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// secretFixtures are the Secrets docs/deploy.md tells the operator to
// create, made the way it says: Secret name → key → content.
func secretFixtures(t *testing.T, bin string) map[string]map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command(bin, "nats-users", "--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("steward nats-users: %v\n%s", err, out)
	}
	read := func(path ...string) []byte {
		b, err := os.ReadFile(filepath.Join(append([]string{dir}, path...)...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	privDER, _ := x509.MarshalPKCS8PrivateKey(priv)
	pubDER, _ := x509.MarshalPKIXPublicKey(pub)
	_, callKey, _ := ed25519.GenerateKey(rand.Reader)
	callDER, _ := x509.MarshalPKCS8PrivateKey(callKey)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := map[string]map[string][]byte{
		natsUsersSecret:  {natsusers.ConfigFile: read(natsusers.ConfigDir, natsusers.ConfigFile)},
		"steward-tokens": {"tokens.json": []byte(`{"tokens": [{"token": "` + hex.EncodeToString(key) + `", "principal": "user:ops"}]}`)},
		secretKeySecret:  {"secret.key": []byte(hex.EncodeToString(key) + "\n")},
		callKeySecret:    {"call.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: callDER})},
		credentialKeySecret: {
			"credential.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
			"credential.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		},
	}
	for _, p := range planes {
		s[natsSeedSecret(p)] = map[string][]byte{natsusers.SeedFile: read(p, natsusers.SeedFile)}
	}
	return s
}

// cluster is the stand-in for the cluster: a loopback port for each port
// of each pod it runs, and the names Services and StatefulSet pods have
// in cluster DNS, mapped to them.
type cluster struct {
	m     *manifests
	ports map[string]map[int32]int // pod → container port → loopback port
	hosts map[string]string        // "name:port" → "127.0.0.1:port"
	nats  []*server.Server
	used  map[int]bool // loopback ports handed out (freePort)
}

// podNames are the pods the check runs of workload name: every NATS node
// (they form the cluster), one pod of every other.
func podNames(m *manifests, name string) []string {
	if ss, ok := m.statefuls[name]; ok {
		n := 1
		if name == "nats" {
			n = int(*ss.Spec.Replicas)
		}
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s-%d", name, i))
		}
		return out
	}
	return []string{name + "-5d8f7c6b9-x7k2p"} // a Deployment pod's name
}

func newCluster(t *testing.T, m *manifests) *cluster {
	t.Helper()
	c := &cluster{m: m, ports: map[string]map[int32]int{}, hosts: map[string]string{}, used: map[int]bool{}}
	for _, name := range append(slices.Clone(workloads), "nats") {
		_, tmpl, _ := m.workload(name)
		for i, pod := range podNames(m, name) {
			c.ports[pod] = map[int32]int{}
			for _, p := range tmpl.Spec.Containers[0].Ports {
				c.ports[pod][p.ContainerPort] = c.freePort(t)
				local := "127.0.0.1:" + strconv.Itoa(c.ports[pod][p.ContainerPort])
				if ss, ok := m.statefuls[name]; ok && ss.Spec.ServiceName != "" {
					c.alias(fmt.Sprintf("%s.%s", pod, ss.Spec.ServiceName), p.ContainerPort, local)
				}
				if i == 0 {
					c.serviceAliases(tmpl, p, local)
				}
			}
		}
	}
	return c
}

// serviceAliases maps every Service that selects tmpl's pods and targets
// container port p to local.
func (c *cluster) serviceAliases(tmpl corev1.PodTemplateSpec, p corev1.ContainerPort, local string) {
	for _, svc := range c.m.services {
		if !subset(svc.Spec.Selector, tmpl.Labels) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if containerPort(tmpl.Spec.Containers[0], sp.TargetPort) == p.ContainerPort {
				c.alias(svc.Name, sp.Port, local)
			}
		}
	}
}

// alias maps name:port, in the short and the namespaced forms of cluster
// DNS, to local.
func (c *cluster) alias(name string, port int32, local string) {
	for _, n := range []string{name, name + ".steward.svc", name + ".steward.svc.cluster.local"} {
		c.hosts[n+":"+strconv.Itoa(int(port))] = local
	}
}

var hostPort = regexp.MustCompile(`[A-Za-z0-9.-]+:[0-9]+`)

// localize maps the cluster's names in s to loopback, and a listen
// address 0.0.0.0:PORT to this pod's loopback port for PORT.
func (c *cluster) localize(pod, s string) string {
	return hostPort.ReplaceAllStringFunc(s, func(hp string) string {
		if port, ok := strings.CutPrefix(hp, "0.0.0.0:"); ok {
			n, _ := strconv.Atoi(port)
			if local, ok := c.ports[pod][int32(n)]; ok {
				return "127.0.0.1:" + strconv.Itoa(local)
			}
		}
		if local, ok := c.hosts[hp]; ok {
			return local
		}
		return hp
	})
}

// startNATS starts the three NATS nodes in this process from the
// StatefulSet's args, each with its store on its volume claim's directory
// and its users from the Secret, and waits for their readiness probe and
// a JetStream meta leader.
func (c *cluster) startNATS(t *testing.T, secrets map[string]map[string][]byte) {
	t.Helper()
	ss := c.m.statefuls["nats"]
	ctr := ss.Spec.Template.Spec.Containers[0]
	var probes []string
	for _, pod := range podNames(c.m, "nats") {
		mnt := mountVolumes(t, ss.Spec.Template.Spec, ctr, secrets, claimNames(ss.Spec.VolumeClaimTemplates))
		env := containerEnv(t, c.m, ctr, pod)
		var args []string
		for _, a := range ctr.Args {
			args = append(args, mnt.rewrite(t, c.localize(pod, expand(a, env))))
		}
		opts, err := natsOptions(args)
		if err != nil {
			t.Fatalf("%s: %v", pod, err)
		}
		opts.Host, opts.Port = "127.0.0.1", c.ports[pod][4222]
		opts.HTTPHost, opts.HTTPPort = "127.0.0.1", c.ports[pod][int32(opts.HTTPPort)]
		opts.NoLog, opts.NoSigs = true, true
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatalf("%s: %v", pod, err)
		}
		s.Start()
		t.Cleanup(s.Shutdown)
		c.nats = append(c.nats, s)
		probes = append(probes, fmt.Sprintf("http://127.0.0.1:%d%s", opts.HTTPPort, ctr.ReadinessProbe.HTTPGet.Path))
	}
	for _, probe := range probes {
		stewardtest.Eventually(t, time.Minute, func() (bool, string) { return httpStatus(probe) == 200, "nats readiness " + probe })
	}
	stewardtest.Eventually(t, time.Minute, func() (bool, string) {
		return slices.ContainsFunc(c.nats, (*server.Server).JetStreamIsLeader), "no JetStream meta leader"
	})
}

func claimNames(pvcs []corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, p := range pvcs {
		out = append(out, p.Name)
	}
	return out
}

// natsOptions parses nats-server's command line as nats-server does
// (reading its -c file), without touching the process's flags. It is not
// safe to call concurrently: nats-server records the flags it saw in a
// package variable.
func natsOptions(args []string) (*server.Options, error) {
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	noop := func() {}
	return server.ConfigureOptions(fs, args, noop, noop, noop)
}

// withoutConfig drops -c FILE from nats-server args, to read the flags
// alone.
func withoutConfig(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" || args[i] == "--config" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// containerEnv is the environment the kubelet gives c in pod: env (with
// the pod's name from the downward API), then the ConfigMaps of envFrom,
// env winning; $(VAR) in a value resolved against the variables before it.
func containerEnv(t *testing.T, m *manifests, c corev1.Container, pod string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			t.Fatalf("envFrom %+v: only ConfigMaps are emulated", ef)
		}
		for k, v := range m.configMaps[ef.ConfigMapRef.Name].Data {
			env[ef.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = pod
		default:
			t.Fatalf("env %s: only values and metadata.name are emulated", e.Name)
		}
	}
	return env
}

// expand resolves $(VAR) as Kubernetes does: a defined variable is
// replaced, an undefined one kept as written, $$ escapes.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if ref := varRef.FindStringSubmatch(s[i:]); ref != nil && strings.HasPrefix(s[i:], ref[0]) {
			if v, ok := env[ref[1]]; ok {
				b.WriteString(v)
				i += len(ref[0]) - 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mounts are a container's volume mounts as local directories.
type mounts struct {
	dirs     map[string]string // mount path → directory
	readOnly []string          // directories nothing may change
}

// mountVolumes makes a directory for each volume mount of c: a Secret's
// filled with its items and left read-only, an emptyDir's or a volume
// claim's writable unless the mount is read-only.
func mountVolumes(t *testing.T, pod corev1.PodSpec, c corev1.Container, secrets map[string]map[string][]byte, claims []string) *mounts {
	t.Helper()
	mnt := &mounts{dirs: map[string]string{}}
	for _, vm := range c.VolumeMounts {
		dir := t.TempDir()
		mnt.dirs[vm.MountPath] = dir
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		switch {
		case i >= 0 && pod.Volumes[i].Secret != nil:
			fillSecret(t, dir, pod.Volumes[i].Secret, secrets)
			mnt.readOnly = append(mnt.readOnly, dir)
		case i >= 0 && pod.Volumes[i].EmptyDir != nil, i < 0 && slices.Contains(claims, vm.Name):
			if vm.ReadOnly {
				mnt.readOnly = append(mnt.readOnly, dir)
			}
		default:
			t.Fatalf("volume mount %s: its volume is neither a Secret, an emptyDir nor a claim", vm.Name)
		}
	}
	return mnt
}

func fillSecret(t *testing.T, dir string, sec *corev1.SecretVolumeSource, secrets map[string]map[string][]byte) {
	t.Helper()
	data, ok := secrets[sec.SecretName]
	if !ok {
		t.Fatalf("Secret %s is not one docs/deploy.md has the operator create", sec.SecretName)
	}
	items := sec.Items
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			t.Fatalf("Secret %s has no key %s", sec.SecretName, it.Key)
		}
		if err := os.WriteFile(filepath.Join(dir, it.Path), b, 0o440); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
}

// rewrite maps an absolute path in arg (the whole argument, or the value
// of --flag=PATH) to its mount's directory; a path on no mount fails t:
// the image's root holds nothing to read and takes no write.
func (mnt *mounts) rewrite(t *testing.T, arg string) string {
	t.Helper()
	prefix, path := "", arg
	if i := strings.Index(arg, "="); strings.HasPrefix(arg, "-") && i > 0 {
		prefix, path = arg[:i+1], arg[i+1:]
	}
	if !strings.HasPrefix(path, "/") {
		return arg
	}
	best := ""
	for mp := range mnt.dirs {
		if (path == mp || strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best) {
			best = mp
		}
	}
	if best == "" {
		t.Errorf("argument %q names %s, on the read-only root: mount a volume there", arg, path)
		return arg
	}
	return prefix + mnt.dirs[best] + strings.TrimPrefix(path, best)
}

// containerRun is one container's process.
type containerRun struct {
	pod       string
	c         corev1.Container
	cluster   *cluster
	cmd       func() *exec.Cmd
	mu        sync.Mutex
	running   *exec.Cmd
	stopping  bool
	restarts  int
	out       *stewardtest.LogBuffer
	exited    chan struct{}
	readOnly  []string
	snapshots map[string]string
}

// start runs the first pod of workload name as its container would run.
func (c *cluster) start(t *testing.T, bin, name string, secrets map[string]map[string][]byte) *containerRun {
	t.Helper()
	_, tmpl, _ := c.m.workload(name)
	ctr, pod := tmpl.Spec.Containers[0], podNames(c.m, name)[0]
	mnt := mountVolumes(t, tmpl.Spec, ctr, secrets, nil)
	root, home := t.TempDir(), t.TempDir() // the image's / and $HOME
	tmp, ok := mnt.dirs["/tmp"]
	if !ok {
		tmp = root // no emptyDir at /tmp: the temp dir is on the read-only root
	}
	env := containerEnv(t, c.m, ctr, pod)
	var args []string
	for _, a := range ctr.Args {
		args = append(args, mnt.rewrite(t, c.localize(pod, expand(a, env))))
	}
	environ := []string{"HOME=" + home, "TMPDIR=" + tmp}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		environ = append(environ, k+"="+c.localize(pod, env[k]))
	}
	r := &containerRun{pod: pod, c: ctr, cluster: c, out: new(stewardtest.LogBuffer), exited: make(chan struct{}),
		readOnly: append(mnt.readOnly, root, home), snapshots: map[string]string{}}
	for _, d := range r.readOnly {
		_ = os.Chmod(d, 0o555)
		r.snapshots[d] = snapshot(t, d)
	}
	r.cmd = func() *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, environ, r.out, r.out
		return cmd
	}
	go r.supervise()
	t.Cleanup(r.stop)
	return r
}

// maxRestarts bounds the restarts the kubelet's emulation allows a
// container before its readiness: a plane that cannot reach what it needs
// at start (JetStream still electing leaders on a new cluster) within its
// bound exits, and the kubelet starts it again, as here.
const maxRestarts = 2

// supervise runs the container's process and restarts it when it exits,
// as the kubelet does (restartPolicy Always), up to maxRestarts times.
func (r *containerRun) supervise() {
	defer close(r.exited)
	for {
		r.mu.Lock()
		if r.stopping || r.restarts > maxRestarts {
			r.mu.Unlock()
			return
		}
		cmd := r.cmd()
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(r.out, "start: %v\n", err)
			r.mu.Unlock()
			return
		}
		r.running = cmd
		r.mu.Unlock()
		_ = cmd.Wait()
		r.mu.Lock()
		if !r.stopping {
			r.restarts++
			fmt.Fprintf(r.out, "--- exited (%v); restart %d\n", cmd.ProcessState, r.restarts)
		}
		r.mu.Unlock()
	}
}

// stop ends the process as the kubelet does: SIGTERM, then SIGKILL.
func (r *containerRun) stop() {
	r.mu.Lock()
	r.stopping = true
	cmd := r.running
	r.mu.Unlock()
	if cmd == nil {
		<-r.exited
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-r.exited
	}
}

// checkReady waits for the container's readiness probe, then checks its
// liveness probe, /metrics on the scrape port and not on the API's, and
// that nothing outside its writable mounts changed.
func (r *containerRun) checkReady(t *testing.T) {
	url := func(port int32, path string) string {
		return fmt.Sprintf("http://127.0.0.1:%d%s", r.cluster.ports[r.pod][port], path)
	}
	probe := func(p *corev1.Probe) string { return url(containerPort(r.c, p.HTTPGet.Port), p.HTTPGet.Path) }
	// Longer than a plane waits for JetStream at start (storesWait in
	// cmd/steward/app, 2 minutes), so that one that gives up exits first.
	stewardtest.Eventually(t, 150*time.Second, func() (bool, string) {
		select {
		case <-r.exited:
			t.Fatalf("%s exited %d times before it was ready:\n%s", r.pod, r.restarts, r.out.String())
		default:
		}
		if httpStatus(probe(r.c.ReadinessProbe)) == 200 {
			return true, ""
		}
		return false, "readiness " + probe(r.c.ReadinessProbe) + "; " + r.pod + " said:\n" + r.out.String()
	})
	if got := httpStatus(probe(r.c.LivenessProbe)); got != 200 {
		t.Errorf("liveness %s: %d", probe(r.c.LivenessProbe), got)
	}
	api := containerPort(r.c, r.c.ReadinessProbe.HTTPGet.Port)
	if got := httpStatus(url(api, "/metrics")); got != 404 {
		t.Errorf("GET /metrics on the API port: %d, want 404 (only the metrics port serves it)", got)
	}
	for _, p := range r.c.Ports {
		if p.Name == "metrics" {
			start := time.Now()
			if got := httpStatus(url(p.ContainerPort, "/metrics")); got != 200 {
				t.Errorf("GET /metrics on port %d (%s): %d after %s, want 200", p.ContainerPort, url(p.ContainerPort, "/metrics"), got, time.Since(start))
			}
			t.Logf("first scrape of /metrics: %s", time.Since(start))
		}
	}
	for _, d := range r.readOnly {
		if now := snapshot(t, d); now != r.snapshots[d] {
			t.Errorf("%s wrote to %s, which is read-only in the pod (before:\n%s\nafter:\n%s)", r.pod, d, r.snapshots[d], now)
		}
	}
	r.mu.Lock()
	if r.restarts > 0 {
		t.Logf("%s was restarted %d times before it was ready", r.pod, r.restarts)
	}
	r.mu.Unlock()
	if t.Failed() || r.restarts > 0 {
		t.Logf("%s output:\n%s", r.pod, r.out.String())
	}
}

// snapshot lists every file under dir with its size and modification
// time: the tests may run as root, whom no mode stops writing.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", strings.TrimPrefix(path, dir), info.Size(), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func httpStatus(url string) int {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
