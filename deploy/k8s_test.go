package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/steward-run/steward/pkg/natsusers"
)

// object is one decoded Kubernetes manifest.
type object struct {
	file string
	kind string
	name string
	obj  any
}

// typeMeta reads just kind and apiVersion to pick the Go type.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// newObject returns a pointer to the typed object for apiVersion/kind.
func newObject(tm typeMeta) (any, error) {
	switch tm.APIVersion + "/" + tm.Kind {
	case "v1/Namespace":
		return &corev1.Namespace{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	}
	return nil, fmt.Errorf("unknown apiVersion %q kind %q", tm.APIVersion, tm.Kind)
}

// strictUnmarshal decodes JSON into v, failing on unknown fields and on
// trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after object")
	}
	return nil
}

// decodeManifests decodes every YAML document of r strictly into typed
// Kubernetes objects.
func decodeManifests(file string, r io.Reader) ([]object, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []object
	for i := 0; ; i++ {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		j, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if s := strings.TrimSpace(string(j)); s == "null" || s == "" {
			continue // empty document, e.g. after a trailing ---
		}
		var tm typeMeta
		if err := json.Unmarshal(j, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		obj, err := newObject(tm)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if err := strictUnmarshal(j, obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", file, i, tm.Kind, err)
		}
		meta := obj.(metav1.Object)
		if meta.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d (%s) has no metadata.name", file, i, tm.Kind)
		}
		out = append(out, object{file: file, kind: tm.Kind, name: meta.GetName(), obj: obj})
	}
}

func TestDecodeManifestsIsStrict(t *testing.T) {
	// Guards the strictness TestKubernetes relies on.
	cases := map[string]string{
		"unknown field":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndatta:\n  A: b\n",
		"nested unknown field": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          imagee: x\n",
		"unknown kind":         "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n",
		"duplicate key":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  A: b\n  A: c\n",
		"wrong type":           "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports: 7700\n",
		"no name":              "apiVersion: v1\nkind: Namespace\nmetadata: {}\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeManifests(name, strings.NewReader(src)); err == nil {
				t.Errorf("decoded without error:\n%s", src)
			}
		})
	}
	objs, err := decodeManifests("ok", strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n---\n"))
	if err != nil || len(objs) != 2 {
		t.Fatalf("two documents: got %d objects, err %v", len(objs), err)
	}
}

// overlays are the kustomize overlays an operator applies
// (kubectl apply -k deploy/k8s/overlays/NAME); every test of the
// manifests runs on each as rendered.
var overlays = []string{"dev", "prod"}

// manifests is every object one overlay renders, by kind and name.
type manifests struct {
	all         []object
	namespaces  map[string]*corev1.Namespace
	configMaps  map[string]*corev1.ConfigMap
	services    map[string]*corev1.Service
	deployments map[string]*appsv1.Deployment
	statefuls   map[string]*appsv1.StatefulSet
	pdbs        map[string]*policyv1.PodDisruptionBudget
	policies    map[string]*networkingv1.NetworkPolicy
}

// renderOverlay builds deploy/k8s/overlays/name with kustomize's own
// library, as `kubectl apply -k` does, and returns the YAML it renders.
func renderOverlay(t *testing.T, name string) []byte {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(k8sDir, "overlays", name))
	if err != nil {
		t.Fatalf("kustomize build overlays/%s: %v", name, err)
	}
	y, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// loadManifests renders overlay and decodes every object strictly.
func loadManifests(t *testing.T, overlay string) *manifests {
	t.Helper()
	if yml, _ := filepath.Glob(filepath.Join(k8sDir, "*", "*.yml")); len(yml) > 0 {
		t.Errorf("%v: use the .yaml extension so these files are checked", yml)
	}
	file := "overlays/" + overlay
	objs, err := decodeManifests(file, bytes.NewReader(renderOverlay(t, overlay)))
	if err != nil {
		t.Fatal(err)
	}
	m := &manifests{
		namespaces:  map[string]*corev1.Namespace{},
		configMaps:  map[string]*corev1.ConfigMap{},
		services:    map[string]*corev1.Service{},
		deployments: map[string]*appsv1.Deployment{},
		statefuls:   map[string]*appsv1.StatefulSet{},
		pdbs:        map[string]*policyv1.PodDisruptionBudget{},
		policies:    map[string]*networkingv1.NetworkPolicy{},
	}
	for _, o := range objs {
		var dup bool
		switch v := o.obj.(type) {
		case *corev1.Namespace:
			dup = put(m.namespaces, o.name, v)
		case *corev1.ConfigMap:
			dup = put(m.configMaps, o.name, v)
		case *corev1.Service:
			dup = put(m.services, o.name, v)
		case *appsv1.Deployment:
			dup = put(m.deployments, o.name, v)
		case *appsv1.StatefulSet:
			dup = put(m.statefuls, o.name, v)
		case *policyv1.PodDisruptionBudget:
			dup = put(m.pdbs, o.name, v)
		case *networkingv1.NetworkPolicy:
			dup = put(m.policies, o.name, v)
		}
		if dup {
			t.Errorf("%s: %s %q is defined twice", file, o.kind, o.name)
		}
		if o.kind != "Namespace" {
			if ns := o.obj.(metav1.Object).GetNamespace(); ns != "steward" {
				t.Errorf("%s: %s %q has namespace %q, want steward", file, o.kind, o.name, ns)
			}
		}
		m.all = append(m.all, o)
	}
	return m
}

// put stores v under name and reports whether name was taken.
func put[V any](m map[string]V, name string, v V) bool {
	_, dup := m[name]
	m[name] = v
	return dup
}

// workload returns the selector and pod template of the Deployment or
// StatefulSet named name, and whether there is one.
func (m *manifests) workload(name string) (*metav1.LabelSelector, corev1.PodTemplateSpec, bool) {
	if d, ok := m.deployments[name]; ok {
		return d.Spec.Selector, d.Spec.Template, true
	}
	if s, ok := m.statefuls[name]; ok {
		return s.Spec.Selector, s.Spec.Template, true
	}
	return nil, corev1.PodTemplateSpec{}, false
}

// pod returns the pod spec of the Deployment or StatefulSet named name,
// to change in place, or nil.
func (m *manifests) pod(name string) *corev1.PodSpec {
	if d, ok := m.deployments[name]; ok {
		return &d.Spec.Template.Spec
	}
	if s, ok := m.statefuls[name]; ok {
		return &s.Spec.Template.Spec
	}
	return nil
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	base := filepath.Join(k8sDir, "base")
	b, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
	}
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := strictUnmarshal(j, &k); err != nil {
		t.Fatalf("base/kustomization.yaml: %v", err)
	}
	if k.Kind != "Kustomization" || k.Namespace != "steward" {
		t.Errorf("base/kustomization.yaml: kind %q namespace %q, want Kustomization in steward", k.Kind, k.Namespace)
	}
	files, _ := filepath.Glob(filepath.Join(base, "*.yaml"))
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Clone(k.Resources)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("base kustomization resources = %v, want every manifest %v", got, want)
	}
}

func TestKubernetes(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) { checkKubernetes(t, loadManifests(t, overlay)) })
	}
}

// checkKubernetes checks how the objects of one overlay fit together:
// selectors, Services, args, keys and seeds.
func checkKubernetes(t *testing.T, m *manifests) {

	if _, ok := m.namespaces["steward"]; !ok {
		t.Error("no Namespace steward")
	}

	cm, ok := m.configMaps["steward-config"]
	if !ok {
		t.Fatal("no ConfigMap steward-config")
	}
	if got := cm.Data["NATS_URL"]; got != natsURL {
		t.Errorf("steward-config NATS_URL = %q, want %q", got, natsURL)
	}
	if got := cm.Data["LOG_LEVEL"]; !slices.Contains([]string{"debug", "info", "warn", "error"}, got) {
		t.Errorf("steward-config LOG_LEVEL = %q, want one of debug, info, warn, error", got)
	}

	t.Run("nats", func(t *testing.T) {
		ss, ok := m.statefuls["nats"]
		if !ok {
			t.Fatal("no StatefulSet nats")
		}
		checkSelector(t, "StatefulSet nats", ss.Spec.Selector, ss.Spec.Template.Labels)
		if _, ok := m.services[ss.Spec.ServiceName]; !ok {
			t.Errorf("StatefulSet serviceName %q has no Service", ss.Spec.ServiceName)
		}
		if len(ss.Spec.Template.Spec.Containers) == 0 {
			t.Fatal("StatefulSet nats has no containers")
		}
		c := ss.Spec.Template.Spec.Containers[0]
		args := append(slices.Clone(c.Command), c.Args...)
		if !slices.Contains(args, "-js") && !slices.Contains(args, "--jetstream") {
			t.Errorf("nats args %q do not enable JetStream (-js)", args)
		}
		sd := flagValue(args, "-sd", "--store_dir")
		if sd == "" {
			t.Fatalf("nats args %q set no store dir (-sd)", args)
		}
		if len(ss.Spec.VolumeClaimTemplates) == 0 {
			t.Fatal("StatefulSet nats has no volumeClaimTemplates")
		}
		var claimed bool
		for _, vm := range c.VolumeMounts {
			if vm.MountPath != sd {
				continue
			}
			for _, pvc := range ss.Spec.VolumeClaimTemplates {
				if pvc.Name == vm.Name {
					claimed = true
					if pvc.Spec.Resources.Requests.Storage().IsZero() {
						t.Errorf("volume claim %q requests no storage", pvc.Name)
					}
				}
			}
		}
		if !claimed {
			t.Errorf("nats store dir %s is not mounted from a volume claim template", sd)
		}
		checkContainer(t, "nats", c)
		checkNATSUsers(t, ss.Spec.Template.Spec, c)

		svc, ok := m.services["nats"]
		if !ok {
			t.Fatal("no Service nats (steward-config points at nats:4222)")
		}
		checkServiceTargets(t, svc, ss.Spec.Template)
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == 4222 }) {
			t.Errorf("Service nats ports %+v lack 4222", svc.Spec.Ports)
		}
	})

	for _, name := range planes {
		t.Run(name, func(t *testing.T) {
			sel, tmpl, ok := m.workload(name)
			if !ok {
				t.Fatalf("no Deployment or StatefulSet %s", name)
			}
			checkSelector(t, name, sel, tmpl.Labels)
			pod := tmpl.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%s has %d containers, want 1", name, len(pod.Containers))
			}
			c := pod.Containers[0]
			if len(c.Command) != 0 {
				t.Errorf("command %q overrides the image's ENTRYPOINT /steward", c.Command)
			}
			if len(c.Args) == 0 || c.Args[0] != "serve" {
				t.Errorf("args %q do not start with serve", c.Args)
			}
			for _, a := range []string{"--plane=" + name, "--nats=$(NATS_URL)", "--log-level=$(LOG_LEVEL)", fmt.Sprintf("--addr=0.0.0.0:%d", planePort)} {
				if !slices.Contains(c.Args, a) {
					t.Errorf("args %q lack %s", c.Args, a)
				}
			}
			if n := strings.Count(strings.Join(c.Args, " "), "--plane="); n != 1 {
				t.Errorf("args %q have %d --plane flags", c.Args, n)
			}
			// Every $(VAR) in args must come from the ConfigMap, else
			// Kubernetes passes it through literally.
			env := envNames(t, c, m.configMaps)
			for _, ref := range varRef.FindAllStringSubmatch(strings.Join(c.Args, " "), -1) {
				if !env[ref[1]] {
					t.Errorf("args use $(%s) but the container has no such env", ref[1])
				}
			}
			if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == planePort }) {
				t.Errorf("container ports %+v lack %d", c.Ports, planePort)
			}
			checkContainer(t, name, c)
			if name == "execution" {
				checkPermitKey(t, pod, c)
			}
			if name == "governance" {
				checkCredentialKey(t, pod, c)
			}
			checkSeed(t, name, pod, c)
			if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
				if c.SecurityContext == nil || c.SecurityContext.RunAsNonRoot == nil || !*c.SecurityContext.RunAsNonRoot {
					t.Error("runAsNonRoot is not set on the pod or the container")
				}
			}

			svc, ok := m.services[name]
			if !ok {
				t.Fatalf("no Service %s", name)
			}
			checkServiceTargets(t, svc, tmpl)
			i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "http" })
			if i < 0 {
				t.Fatalf("Service %s has no port named http: %+v", name, svc.Spec.Ports)
			}
			if p := svc.Spec.Ports[i]; p.Port != planePort {
				t.Errorf("Service %s port http = %d, want %d", name, p.Port, planePort)
			}
			// Exactly one plane's pods behind each plane's Service.
			for _, other := range planes {
				if other == name {
					continue
				}
				if _, ot, ok := m.workload(other); ok && subset(svc.Spec.Selector, ot.Labels) {
					t.Errorf("Service %s selector %v also selects %s's pods", name, svc.Spec.Selector, other)
				}
			}
		})
	}
}

// credentialKeySecret is the Secret governance reads its credential
// signing key from; the operator creates it (see governance.yaml).
const credentialKeySecret = "steward-credential-key"

// checkCredentialKey checks that the governance container is given a
// credential key file from the Secret, so every replica signs with one
// key, and that the non-root user can read it.
func checkCredentialKey(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	path := flagValue(c.Args, "--credential-key")
	if path == "" {
		t.Fatalf("governance args %q set no --credential-key: each replica would sign with a key of its own", c.Args)
	}
	dir, file := filepath.Dir(path), filepath.Base(path)
	i := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == dir })
	if i < 0 {
		t.Fatalf("--credential-key %s: nothing is mounted at %s", path, dir)
	}
	vm := c.VolumeMounts[i]
	if !vm.ReadOnly {
		t.Errorf("the credential key mount %s is not read-only", dir)
	}
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
	if j < 0 || pod.Volumes[j].Secret == nil || pod.Volumes[j].Secret.SecretName != credentialKeySecret {
		t.Fatalf("the credential key mount %s is not from Secret %s", dir, credentialKeySecret)
	}
	sec := pod.Volumes[j].Secret
	if len(sec.Items) > 0 && !slices.ContainsFunc(sec.Items, func(k corev1.KeyToPath) bool { return k.Path == file }) {
		t.Errorf("Secret %s items %+v do not put a file at %s", credentialKeySecret, sec.Items, file)
	}
	readable := sec.DefaultMode == nil || *sec.DefaultMode&0o004 != 0 ||
		(*sec.DefaultMode&0o040 != 0 && pod.SecurityContext != nil && pod.SecurityContext.FSGroup != nil)
	if !readable {
		t.Errorf("the credential key (mode %o) is not readable by the non-root user: set fsGroup and a group-readable mode", *sec.DefaultMode)
	}
}

// checkPermitKey checks that the execution container verifies permits
// against a public key from the credential key's Secret, and is given
// nothing else of it: the private key stays with governance.
func checkPermitKey(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	path := flagValue(c.Args, "--permit-key")
	if path == "" {
		t.Fatalf("execution args %q set no --permit-key: permits would not be verified", c.Args)
	}
	dir, file := filepath.Dir(path), filepath.Base(path)
	i := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == dir })
	if i < 0 || !c.VolumeMounts[i].ReadOnly {
		t.Fatalf("--permit-key %s: no read-only mount at %s", path, dir)
	}
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if j < 0 || pod.Volumes[j].Secret == nil || pod.Volumes[j].Secret.SecretName != credentialKeySecret {
		t.Fatalf("the permit key mount %s is not from Secret %s", dir, credentialKeySecret)
	}
	sec := pod.Volumes[j].Secret
	if len(sec.Items) != 1 || sec.Items[0].Key != "credential.pub" || sec.Items[0].Path != file {
		t.Errorf("Secret %s items %+v: want only credential.pub, at %s (never the private key)", credentialKeySecret, sec.Items, file)
	}
	if sec.DefaultMode != nil && *sec.DefaultMode&0o004 == 0 && (*sec.DefaultMode&0o040 == 0 || pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil) {
		t.Errorf("the permit key (mode %o) is not readable by the non-root user", *sec.DefaultMode)
	}
}

// natsUsersSecret is the Secret nats reads its users from, and
// natsSeedSecret each plane's seed; the operator creates them from what
// `steward nats-users` writes (see nats.yaml).
const natsUsersSecret = "steward-nats-users"

func natsSeedSecret(plane string) string { return "steward-nats-" + plane }

// secretMount returns the Secret volume c mounts read-only at the
// directory of path, failing t if there is none.
func secretMount(t *testing.T, what string, pod corev1.PodSpec, c corev1.Container, path string) *corev1.SecretVolumeSource {
	t.Helper()
	dir := filepath.Dir(path)
	i := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == dir })
	if i < 0 || !c.VolumeMounts[i].ReadOnly {
		t.Fatalf("%s %s: no read-only mount at %s", what, path, dir)
	}
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if j < 0 || pod.Volumes[j].Secret == nil {
		t.Fatalf("%s %s: the mount at %s is not a Secret", what, path, dir)
	}
	sec := pod.Volumes[j].Secret
	if sec.DefaultMode != nil && *sec.DefaultMode&0o004 == 0 && (*sec.DefaultMode&0o040 == 0 || pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil) {
		t.Errorf("%s (mode %o) is not readable by the non-root user: set fsGroup and a group-readable mode", what, *sec.DefaultMode)
	}
	return sec
}

// checkNATSUsers checks that nats runs with the users `steward nats-users`
// renders, mounted from their Secret, and that they enable authorization.
func checkNATSUsers(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	args := append(slices.Clone(c.Command), c.Args...)
	conf := flagValue(args, "-c", "--config")
	if conf == "" {
		t.Fatalf("nats args %q read no config (-c): it would take any client", args)
	}
	sec := secretMount(t, "the nats config", pod, c, conf)
	if sec.SecretName != natsUsersSecret {
		t.Errorf("the nats config is from Secret %s, want %s", sec.SecretName, natsUsersSecret)
	}
	if len(sec.Items) != 1 || sec.Items[0].Key != natsusers.ConfigFile || sec.Items[0].Path != filepath.Base(conf) {
		t.Errorf("Secret %s items %+v: want %s at %s", natsUsersSecret, sec.Items, natsusers.ConfigFile, filepath.Base(conf))
	}
	checkAuthorization(t)
}

// checkSeed checks that a plane connects to NATS as its own user, with a
// seed from its own Secret, and mounts no other plane's.
func checkSeed(t *testing.T, plane string, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	path := flagValue(c.Args, "--nats-nkey")
	if path == "" {
		t.Fatalf("args %q pass no --nats-nkey: the plane would connect as no user", c.Args)
	}
	sec := secretMount(t, "the NATS seed", pod, c, path)
	if sec.SecretName != natsSeedSecret(plane) {
		t.Errorf("the NATS seed is from Secret %s, want %s", sec.SecretName, natsSeedSecret(plane))
	}
	if len(sec.Items) != 1 || sec.Items[0].Key != natsusers.SeedFile || sec.Items[0].Path != filepath.Base(path) {
		t.Errorf("Secret %s items %+v: want only %s, at %s", sec.SecretName, sec.Items, natsusers.SeedFile, filepath.Base(path))
	}
	for _, v := range pod.Volumes {
		if v.Secret == nil {
			continue
		}
		for _, other := range planes {
			if other != plane && v.Secret.SecretName == natsSeedSecret(other) {
				t.Errorf("volume %s mounts %s's seed (Secret %s)", v.Name, other, v.Secret.SecretName)
			}
		}
		if v.Secret.SecretName == natsUsersSecret {
			t.Errorf("volume %s mounts the NATS users, which are nats's", v.Name)
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// envNames is the set of environment variable names container c gets from
// env and from the ConfigMaps it references in envFrom.
func envNames(t *testing.T, c corev1.Container, cms map[string]*corev1.ConfigMap) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, e := range c.Env {
		names[e.Name] = true
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		cm, ok := cms[ef.ConfigMapRef.Name]
		if !ok {
			t.Errorf("envFrom references ConfigMap %q, which is not defined", ef.ConfigMapRef.Name)
			continue
		}
		for k := range cm.Data {
			names[ef.Prefix+k] = true
		}
	}
	return names
}

// checkContainer checks probes, resources and the container security
// context shared by every workload.
func checkContainer(t *testing.T, name string, c corev1.Container) {
	t.Helper()
	for kind, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil {
			t.Errorf("%s: no %s probe", name, kind)
			continue
		}
		switch {
		case p.GRPC != nil:
			if !hasContainerPort(c, intstr.FromInt32(p.GRPC.Port)) {
				t.Errorf("%s: %s grpc probe port %d is not a container port", name, kind, p.GRPC.Port)
			}
		case p.HTTPGet != nil:
			if !strings.HasPrefix(p.HTTPGet.Path, "/healthz") {
				t.Errorf("%s: %s httpGet path %q, want /healthz", name, kind, p.HTTPGet.Path)
			}
			if !hasContainerPort(c, p.HTTPGet.Port) {
				t.Errorf("%s: %s httpGet port %s is not a container port", name, kind, p.HTTPGet.Port.String())
			}
		case p.TCPSocket != nil:
			if !hasContainerPort(c, p.TCPSocket.Port) {
				t.Errorf("%s: %s tcpSocket port %s is not a container port", name, kind, p.TCPSocket.Port.String())
			}
		default:
			t.Errorf("%s: %s probe has no handler", name, kind)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[r]
		lim, hasLim := c.Resources.Limits[r]
		if !hasReq || !hasLim {
			t.Errorf("%s: resources lack %s request or limit", name, r)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %s exceeds limit %s", name, r, req.String(), lim.String())
		}
	}
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("%s: no container securityContext", name)
		return
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation is not false", name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem is not true", name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", name)
	}
}

func hasContainerPort(c corev1.Container, port intstr.IntOrString) bool {
	return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		if port.Type == intstr.String {
			return p.Name == port.StrVal
		}
		return p.ContainerPort == port.IntVal
	})
}

// checkSelector checks a workload's selector matches its pod template.
func checkSelector(t *testing.T, what string, sel *metav1.LabelSelector, podLabels map[string]string) {
	t.Helper()
	if sel == nil || len(sel.MatchLabels) == 0 {
		t.Errorf("%s: no selector.matchLabels", what)
		return
	}
	if len(sel.MatchExpressions) != 0 {
		t.Errorf("%s: selector.matchExpressions are not checked here; use matchLabels", what)
	}
	if !subset(sel.MatchLabels, podLabels) {
		t.Errorf("%s: selector %v does not match pod template labels %v", what, sel.MatchLabels, podLabels)
	}
}

// checkServiceTargets checks a Service selects the pods of tmpl and that
// each target port exists on a container.
func checkServiceTargets(t *testing.T, svc *corev1.Service, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	if len(svc.Spec.Selector) == 0 {
		t.Errorf("Service %s has no selector", svc.Name)
	} else if !subset(svc.Spec.Selector, tmpl.Labels) {
		t.Errorf("Service %s selector %v is not a subset of pod labels %v", svc.Name, svc.Spec.Selector, tmpl.Labels)
	}
	if len(svc.Spec.Ports) == 0 {
		t.Errorf("Service %s has no ports", svc.Name)
	}
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port) // targetPort defaults to port
		}
		if !slices.ContainsFunc(tmpl.Spec.Containers, func(c corev1.Container) bool { return hasContainerPort(c, target) }) {
			t.Errorf("Service %s port %d targets %s, which no container exposes", svc.Name, p.Port, target.String())
		}
	}
}

// subset reports whether every label of sel is in labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}
