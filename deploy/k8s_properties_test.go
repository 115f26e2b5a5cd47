package deploy_test

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// workloads are the Deployments and StatefulSets of Steward's own binary:
// the four planes and the gateway.
var workloads = append(slices.Clone(planes), "gateway")

// servedPaths are the HTTP paths the binary answers a probe on, by its
// subcommand: pkg/rpc's Listen mounts /healthz beside every plane's
// services; the gateway adds /readyz, which answers once it reaches the
// planes. The run-the-binary check GETs each probe's path for real.
var servedPaths = map[string][]string{
	"serve":   {"/healthz"},
	"gateway": {"/healthz", "/readyz"},
}

// keyFlags are the flags that name a key, a seed or the tokens: each
// file must come from a Secret, never from the image or a ConfigMap.
var keyFlags = []string{"--auth", "--nats-nkey", "--secret-key", "--credential-key", "--permit-key", "--call-key"}

// runtimeEnv are the variables a manifest may set literally: the Go
// runtime's, from docs/capacity.md's model, no secret among them.
var runtimeEnv = []string{"GOMEMLIMIT"}

// callKeySecret holds the key execution signs tool calls with.
const callKeySecret = "steward-call-key"

// property is one property the issue asks of the manifests: it returns
// what is wrong with one rendered overlay.
type property struct {
	name  string
	check func(overlay string, m *manifests) []string
}

var properties = []property{
	{"replicas", replicaFaults},
	{"nats cluster", natsClusterFaults},
	{"probes", probeFaults},
	{"resources", resourceFaults},
	{"sized by the capacity model", sizingFaults},
	{"disruption budgets", pdbFaults},
	{"network policies", networkFaults},
	{"security context", securityFaults},
	{"scrape annotations", scrapeFaults},
	{"keys from Secrets", secretFaults},
	{"stable worker names", workerNameFaults},
	{"one address", oneAddressFaults},
}

// TestManifestProperties checks every property of issue 29's Kubernetes
// list on each rendered overlay, and that each check catches the fault it
// is for.
func TestManifestProperties(t *testing.T) {
	for _, overlay := range overlays {
		m := loadManifests(t, overlay)
		for _, p := range properties {
			t.Run(overlay+"/"+p.name, func(t *testing.T) {
				for _, f := range p.check(overlay, m) {
					t.Error(f)
				}
			})
		}
	}
	t.Run("dev requests less than prod", func(t *testing.T) {
		dev, prod := loadManifests(t, "dev"), loadManifests(t, "prod")
		for _, name := range append(slices.Clone(workloads), "nats") {
			_, d, _ := dev.workload(name)
			_, p, _ := prod.workload(name)
			for r, q := range d.Spec.Containers[0].Resources.Requests {
				pq := p.Spec.Containers[0].Resources.Requests[r]
				if c := q.Cmp(pq); c > 0 || (c == 0 && r == corev1.ResourceCPU) {
					t.Errorf("%s: dev requests %s %s, prod %s: want less CPU and no more memory in dev", name, r, q.String(), pq.String())
				}
			}
		}
	})
	spoilt := map[string]func(m *manifests){
		"replicas":     func(m *manifests) { m.deployments["control"].Spec.Replicas = ptr(int32(1)) },
		"nats cluster": func(m *manifests) { dropArg(&m.statefuls["nats"].Spec.Template.Spec.Containers[0], "--routes") },
		"probes":       func(m *manifests) { m.pod("state").Containers[0].ReadinessProbe.HTTPGet.Path = "/ready" },
		"resources":    func(m *manifests) { delete(m.pod("governance").Containers[0].Resources.Limits, corev1.ResourceMemory) },
		"sized by the capacity model": func(m *manifests) {
			m.pod("state").Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
		},
		"disruption budgets": func(m *manifests) { delete(m.pdbs, "execution") },
		"network policies": func(m *manifests) {
			m.policies["nats"].Spec.Ingress[0].From = nil // clients from anywhere
		},
		"security context": func(m *manifests) {
			m.pod("gateway").Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr(false)
		},
		"scrape annotations": func(m *manifests) { dropArg(&m.pod("state").Containers[0], "--metrics-addr") },
		"keys from Secrets": func(m *manifests) {
			pod := m.pod("governance")
			for i, v := range pod.Volumes {
				if v.Name == "credential-key" {
					pod.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
				}
			}
		},
		"stable worker names": func(m *manifests) { dropArg(&m.pod("execution").Containers[0], "--worker") },
		"one address":         func(m *manifests) { m.services["state"].Spec.ClusterIP = "" },
	}
	for _, p := range properties {
		t.Run("catches/"+p.name, func(t *testing.T) {
			spoil, ok := spoilt[p.name]
			if !ok {
				t.Fatal("no spoiler for this property: add one")
			}
			m := loadManifests(t, "prod")
			spoil(m)
			if len(p.check("prod", m)) == 0 {
				t.Error("the spoilt manifests pass")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// dropArg removes the arguments of c that set flag.
func dropArg(c *corev1.Container, flag string) {
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
}

func replicaFaults(overlay string, m *manifests) []string {
	var faults []string
	for _, name := range workloads {
		var n int32 = 1
		switch {
		case m.deployments[name] != nil && m.deployments[name].Spec.Replicas != nil:
			n = *m.deployments[name].Spec.Replicas
		case m.statefuls[name] != nil && m.statefuls[name].Spec.Replicas != nil:
			n = *m.statefuls[name].Spec.Replicas
		}
		if overlay == "prod" && n < 2 {
			faults = append(faults, fmt.Sprintf("%s: %d replicas in prod, want at least 2", name, n))
		}
		if overlay == "dev" && n != 1 {
			faults = append(faults, fmt.Sprintf("%s: %d replicas in dev, want 1", name, n))
		}
	}
	if _, ok := m.deployments["execution"]; ok {
		faults = append(faults, "execution is a Deployment: its workers' names would change with every pod")
	}
	return faults
}

// natsClusterFaults checks that NATS is three nodes routed to each
// other by their stable names, each with its store on a volume claim.
func natsClusterFaults(_ string, m *manifests) []string {
	ss, ok := m.statefuls["nats"]
	if !ok {
		return []string{"no StatefulSet nats"}
	}
	var faults []string
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
		faults = append(faults, "nats: want 3 replicas")
	}
	headless, ok := m.services[ss.Spec.ServiceName]
	if !ok || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		faults = append(faults, fmt.Sprintf("nats: serviceName %q is not a headless Service", ss.Spec.ServiceName))
	}
	c := ss.Spec.Template.Spec.Containers[0]
	opts, err := natsOptions(withoutConfig(c.Args))
	if err != nil {
		return append(faults, "nats args: "+err.Error())
	}
	if !opts.JetStream || opts.Cluster.Name == "" || opts.Cluster.Port == 0 {
		faults = append(faults, fmt.Sprintf("nats args %q: want JetStream, a cluster name and a cluster port", c.Args))
	}
	if opts.ServerName != "$(POD_NAME)" || !fieldRefEnv(c, "POD_NAME", "metadata.name") {
		faults = append(faults, "nats: the server name must be the pod's (--name=$(POD_NAME) from metadata.name): JetStream knows its peers by name")
	}
	var routes []string
	for _, r := range opts.Routes {
		routes = append(routes, r.Host)
	}
	var want []string
	for i := range 3 {
		want = append(want, fmt.Sprintf("nats-%d.%s.steward.svc:%d", i, ss.Spec.ServiceName, opts.Cluster.Port))
	}
	if !slices.Equal(routes, want) {
		faults = append(faults, fmt.Sprintf("nats routes %v, want each node's stable name %v", routes, want))
	}
	if !hasContainerPort(c, intstr.FromInt(opts.Cluster.Port)) {
		faults = append(faults, fmt.Sprintf("nats: cluster port %d is not a container port", opts.Cluster.Port))
	}
	claimed := slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool {
		return vm.MountPath == opts.StoreDir && slices.ContainsFunc(ss.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool {
			return p.Name == vm.Name && !p.Spec.Resources.Requests.Storage().IsZero()
		})
	})
	if !claimed {
		faults = append(faults, fmt.Sprintf("nats: store dir %q is not on a volume claim template with storage", opts.StoreDir))
	}
	return faults
}

// fieldRefEnv reports whether c's env name comes from the pod's field.
func fieldRefEnv(c corev1.Container, name, field string) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == field
	})
}

// probeFaults checks that each workload of the binary is probed for
// readiness and liveness on a path it serves, on the port --addr binds.
func probeFaults(_ string, m *manifests) []string {
	var faults []string
	for _, name := range workloads {
		_, tmpl, _ := m.workload(name)
		c := tmpl.Spec.Containers[0]
		paths := servedPaths[c.Args[0]]
		addr := flagValue(c.Args, "--addr")
		for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
			if p == nil {
				if kind != "startup" {
					faults = append(faults, fmt.Sprintf("%s: no %s probe", name, kind))
				}
				continue
			}
			if p.HTTPGet == nil || !slices.Contains(paths, p.HTTPGet.Path) {
				faults = append(faults, fmt.Sprintf("%s: %s probe %+v is not an httpGet on a path `steward %s` serves (%v)", name, kind, p.ProbeHandler, c.Args[0], paths))
				continue
			}
			if port := containerPort(c, p.HTTPGet.Port); !strings.HasSuffix(addr, ":"+strconv.Itoa(int(port))) {
				faults = append(faults, fmt.Sprintf("%s: %s probe port %s (%d) is not --addr %s", name, kind, p.HTTPGet.Port.String(), port, addr))
			}
		}
	}
	return faults
}

// containerPort resolves a named or numbered port of c, 0 if none.
func containerPort(c corev1.Container, port intstr.IntOrString) int32 {
	for _, p := range c.Ports {
		if (port.Type == intstr.String && p.Name == port.StrVal) || (port.Type == intstr.Int && p.ContainerPort == port.IntVal) {
			return p.ContainerPort
		}
	}
	return 0
}

func resourceFaults(_ string, m *manifests) []string {
	var faults []string
	for _, name := range append(slices.Clone(workloads), "nats") {
		_, tmpl, _ := m.workload(name)
		for _, c := range tmpl.Spec.Containers {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[r]
				lim, hasLim := c.Resources.Limits[r]
				if !hasReq || !hasLim || req.Cmp(lim) > 0 {
					faults = append(faults, fmt.Sprintf("%s: %s request %v and limit %v, want both, request ≤ limit", name, r, req.String(), lim.String()))
				}
			}
		}
	}
	return faults
}

// pdbFaults checks that each Deployment and StatefulSet has a budget of
// its own letting one pod go at a time.
func pdbFaults(_ string, m *manifests) []string {
	var faults []string
	for _, name := range append(slices.Clone(workloads), "nats") {
		_, tmpl, _ := m.workload(name)
		var own []string
		for pn, pdb := range m.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(tmpl.Labels)) {
				continue
			}
			own = append(own, pn)
			if mu := pdb.Spec.MaxUnavailable; pdb.Spec.MinAvailable != nil || mu == nil || mu.IntValue() != 1 {
				faults = append(faults, fmt.Sprintf("PodDisruptionBudget %s: want maxUnavailable 1 (one pod at a time; never stuck at one replica)", pn))
			}
		}
		if len(own) != 1 {
			faults = append(faults, fmt.Sprintf("%s: PodDisruptionBudgets %v select its pods, want exactly one", name, own))
		}
	}
	return faults
}

func securityFaults(_ string, m *manifests) []string {
	var faults []string
	for _, name := range append(slices.Clone(workloads), "nats") {
		_, tmpl, _ := m.workload(name)
		pod := tmpl.Spec
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			faults = append(faults, name+": the pod does not run as a non-root user (runAsNonRoot, runAsUser)")
		}
		if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			faults = append(faults, name+": seccompProfile is not RuntimeDefault")
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			faults = append(faults, name+": mounts a service account token it never uses")
		}
		for _, c := range pod.Containers {
			sc := c.SecurityContext
			switch {
			case sc == nil:
				faults = append(faults, name+": no container securityContext")
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				faults = append(faults, name+": readOnlyRootFilesystem is not true")
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				faults = append(faults, name+": allowPrivilegeEscalation is not false")
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
				faults = append(faults, name+": capabilities do not drop ALL and add none")
			case sc.Privileged != nil && *sc.Privileged:
				faults = append(faults, name+": privileged")
			}
		}
	}
	return faults
}

// scrapeFaults checks that each plane is scraped on --metrics-addr's
// port, so that the API port serves no /metrics.
func scrapeFaults(_ string, m *manifests) []string {
	var faults []string
	for _, name := range planes {
		_, tmpl, _ := m.workload(name)
		c := tmpl.Spec.Containers[0]
		a := tmpl.Annotations
		addr := flagValue(c.Args, "--metrics-addr")
		switch {
		case addr == "":
			faults = append(faults, name+": no --metrics-addr: /metrics is on the API port, open to every caller")
		case a["prometheus.io/scrape"] != "true" || a["prometheus.io/path"] != "/metrics":
			faults = append(faults, fmt.Sprintf("%s: annotations %v do not ask for a scrape of /metrics", name, a))
		case !strings.HasSuffix(addr, ":"+a["prometheus.io/port"]) || !hasContainerPort(c, intstr.Parse(a["prometheus.io/port"])):
			faults = append(faults, fmt.Sprintf("%s: prometheus.io/port %q is not --metrics-addr %s's container port", name, a["prometheus.io/port"], addr))
		}
	}
	return faults
}

// secretFaults checks that every key, seed and token file a container
// is given comes from a Secret mounted read-only, and that no container
// takes a value of its environment literally from the manifest but the
// downward API's and the Go runtime's settings (runtimeEnv).
func secretFaults(_ string, m *manifests) []string {
	var faults []string
	for _, name := range workloads {
		_, tmpl, _ := m.workload(name)
		pod, c := tmpl.Spec, tmpl.Spec.Containers[0]
		for _, f := range keyFlags {
			path := flagValue(c.Args, f)
			if path == "" {
				continue
			}
			vol, mount := volumeAt(pod, c, path)
			if vol == nil || vol.Secret == nil || !mount.ReadOnly {
				faults = append(faults, fmt.Sprintf("%s: %s %s is not on a read-only Secret volume", name, f, path))
			}
		}
		if name != "execution" && refersTo(pod, callKeySecret) {
			faults = append(faults, fmt.Sprintf("%s refers to Secret %s: only execution signs tool calls", name, callKeySecret))
		}
		for _, e := range c.Env {
			if e.Value != "" && !slices.Contains(runtimeEnv, e.Name) {
				faults = append(faults, fmt.Sprintf("%s: env %s is written in the manifest; keys and tokens come from Secrets", name, e.Name))
			}
		}
	}
	for _, cm := range m.configMaps {
		for k := range cm.Data {
			if l := strings.ToLower(k); strings.Contains(l, "key") || strings.Contains(l, "token") || strings.Contains(l, "seed") {
				faults = append(faults, fmt.Sprintf("ConfigMap %s holds %s: keys and tokens belong in Secrets", cm.Name, k))
			}
		}
	}
	return faults
}

// volumeAt returns the volume and mount that path lies under in c, or nil.
func volumeAt(pod corev1.PodSpec, c corev1.Container, path string) (*corev1.Volume, corev1.VolumeMount) {
	var best corev1.VolumeMount
	for _, vm := range c.VolumeMounts {
		if (path == vm.MountPath || strings.HasPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/")) && len(vm.MountPath) > len(best.MountPath) {
			best = vm
		}
	}
	for i, v := range pod.Volumes {
		if best.Name != "" && v.Name == best.Name {
			return &pod.Volumes[i], best
		}
	}
	return nil, best
}

// workerNameFaults checks that the execution workers are named by their
// StatefulSet pods, which keep their names when rescheduled.
func workerNameFaults(_ string, m *manifests) []string {
	ss, ok := m.statefuls["execution"]
	if !ok {
		return []string{"execution is not a StatefulSet"}
	}
	c := ss.Spec.Template.Spec.Containers[0]
	w := flagValue(c.Args, "--worker")
	ref := varRef.FindStringSubmatch(w)
	if ref == nil || ref[0] != w || !fieldRefEnv(c, ref[1], "metadata.name") {
		return []string{fmt.Sprintf("execution --worker %q is not the pod's name ($(VAR) of metadata.name)", w)}
	}
	return nil
}

// peer is a pod (or an address outside the cluster) a connection comes
// from or goes to.
type peer struct {
	name      string
	labels    map[string]string
	namespace string // its namespace's name; "" outside the cluster
	ip        netip.Addr
}

// networkFaults checks what the NetworkPolicies allow, as Kubernetes
// reads them (a connection passes if any policy selecting the pod allows
// it), against what each component needs and no more.
func networkFaults(_ string, m *manifests) []string {
	pods := map[string]peer{}
	for _, name := range append(slices.Clone(workloads), "nats") {
		_, tmpl, _ := m.workload(name)
		pods[name] = peer{name: name, labels: tmpl.Labels, namespace: "steward"}
	}
	outside := peer{name: "a pod of another namespace", labels: map[string]string{}, namespace: "tenants"}
	monitoring := peer{name: "Prometheus", labels: map[string]string{}, namespace: "monitoring"}
	web := peer{name: "a tool on the internet", ip: netip.MustParseAddr("203.0.113.7")}
	metadata := peer{name: "the cloud metadata address", ip: netip.MustParseAddr("169.254.169.254")}
	type want struct {
		from, to peer
		port     int32
		allowed  bool
	}
	var wants []want
	for _, p := range planes {
		wants = append(wants,
			want{outside, pods[p], 7700, true}, want{outside, pods[p], 9090, false},
			want{monitoring, pods[p], 9090, true}, want{pods["gateway"], pods[p], 7700, true},
			want{pods[p], pods["nats"], 4222, true}, want{pods[p], pods["nats"], 6222, false},
			want{pods[p], metadata, 443, false}, want{pods[p], pods["gateway"], 7700, false})
	}
	wants = append(wants,
		want{pods["execution"], web, 443, true}, want{pods["execution"], web, 80, true},
		want{pods["execution"], web, 22, false}, want{pods["execution"], metadata, 80, false},
		want{outside, pods["nats"], 4222, false}, want{pods["gateway"], pods["nats"], 4222, false},
		want{pods["nats"], pods["nats"], 6222, true}, want{pods["nats"], pods["nats"], 4222, false},
		want{outside, pods["nats"], 6222, false}, want{monitoring, pods["nats"], 8222, true},
		want{outside, pods["nats"], 8222, false}, want{pods["nats"], web, 443, false},
		want{outside, pods["gateway"], 7700, true}, want{pods["gateway"], pods["control"], 7700, true},
		want{pods["gateway"], web, 443, false})
	policies := slices.Collect(maps.Values(m.policies))
	var faults []string
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		if _, ok := m.policies[name]; !ok {
			faults = append(faults, "no NetworkPolicy "+name)
		}
	}
	for _, w := range wants {
		if got := allows(policies, w.from, w.to, w.port); got != w.allowed {
			faults = append(faults, fmt.Sprintf("%s → %s port %d: allowed %v, want %v", w.from.name, w.to.name, w.port, got, w.allowed))
		}
	}
	return faults
}

// allows reports whether the policies let from connect to to on port:
// egress of from's namespace (if it is in steward) and ingress of to's.
func allows(policies []*networkingv1.NetworkPolicy, from, to peer, port int32) bool {
	return allowsOne(policies, from, to, port, networkingv1.PolicyTypeEgress) &&
		allowsOne(policies, to, from, port, networkingv1.PolicyTypeIngress)
}

// allowsOne applies the policies of direction kind selecting self (in
// steward) to a connection with other.
func allowsOne(policies []*networkingv1.NetworkPolicy, self, other peer, port int32, kind networkingv1.PolicyType) bool {
	if self.namespace != "steward" {
		return true // not governed by these policies
	}
	selected := false
	for _, p := range policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil || !sel.Matches(labels.Set(self.labels)) || !slices.Contains(p.Spec.PolicyTypes, kind) {
			continue
		}
		selected = true
		var rules [][]networkingv1.NetworkPolicyPeer
		var ports [][]networkingv1.NetworkPolicyPort
		for _, r := range p.Spec.Ingress {
			if kind == networkingv1.PolicyTypeIngress {
				rules, ports = append(rules, r.From), append(ports, r.Ports)
			}
		}
		for _, r := range p.Spec.Egress {
			if kind == networkingv1.PolicyTypeEgress {
				rules, ports = append(rules, r.To), append(ports, r.Ports)
			}
		}
		for i := range rules {
			if portMatches(ports[i], port) && peerMatches(rules[i], other) {
				return true
			}
		}
	}
	return !selected
}

func portMatches(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	return len(ports) == 0 || slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool {
		return p.Port == nil || (p.Port.Type == intstr.Int && p.Port.IntVal == port)
	})
}

// peerMatches reports whether other is one of peers (none: everyone).
func peerMatches(peers []networkingv1.NetworkPolicyPeer, other peer) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		if p.IPBlock != nil {
			if other.ip.IsValid() && inBlock(p.IPBlock, other.ip) {
				return true
			}
			continue
		}
		if other.namespace == "" {
			continue
		}
		nsOK := p.NamespaceSelector == nil && other.namespace == "steward"
		if p.NamespaceSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
			nsOK = err == nil && sel.Matches(labels.Set{"kubernetes.io/metadata.name": other.namespace})
		}
		podOK := p.PodSelector == nil
		if p.PodSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(p.PodSelector)
			podOK = err == nil && sel.Matches(labels.Set(other.labels))
		}
		if nsOK && podOK {
			return true
		}
	}
	return false
}

func inBlock(b *networkingv1.IPBlock, ip netip.Addr) bool {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Contains(ip) {
		return false
	}
	return !slices.ContainsFunc(b.Except, func(e string) bool {
		p, err := netip.ParsePrefix(e)
		return err == nil && p.Contains(ip)
	})
}

// oneAddressFaults: the gateway is the one address, and it reaches every
// replica of each plane: its flag for each plane names that plane's
// Service, which is headless, so that the name resolves to every pod and
// the gateway takes turns over them, passing a dead one over at once.
func oneAddressFaults(_ string, m *manifests) []string {
	var faults []string
	args := m.pod("gateway").Containers[0].Args
	for _, plane := range planes {
		want := "http://" + plane + ".steward.svc:7700"
		if got := flagValue(args, "--"+plane); got != want {
			faults = append(faults, fmt.Sprintf("gateway: --%s is %q, want %q", plane, got, want))
		}
		if svc := m.services[plane]; svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
			faults = append(faults, fmt.Sprintf("service %s is not headless (clusterIP: None): the gateway would see one address, not its pods", plane))
		}
	}
	return faults
}
