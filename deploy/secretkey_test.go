package deploy_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
)

// The secret key: secret tool parameters are committed to and sealed with
// it by control and opened with it by execution (docs/secrets.md). Both
// must read the one same key, and no other plane may hold it.
const (
	secretKeyJob    = "secret-key"         // compose: the one-shot that makes it
	secretKeySecret = "steward-secret-key" // Kubernetes: the Secret that holds it
)

// secretKeyPlanes are the planes that take --secret-key; every other one
// must not see the key.
var secretKeyPlanes = []string{"control", "execution"}

func TestComposeSecretKey(t *testing.T) {
	p, _ := loadRepoCompose(t)
	for _, f := range composeSecretKeyFaults(p) {
		t.Error(f)
	}
	// The check must catch each way of getting it wrong.
	for name, spoil := range map[string]func(p *types.Project){
		"execution without --secret-key": func(p *types.Project) {
			s := p.Services["execution"]
			s.Command = slices.DeleteFunc(slices.Clone(s.Command), func(a string) bool { return strings.HasPrefix(a, "--secret-key") })
			p.Services["execution"] = s
		},
		"control on another volume": func(p *types.Project) {
			s := p.Services["control"]
			s.Volumes = slices.Clone(s.Volumes)
			for i, v := range s.Volumes {
				if v.Source == secretKeyJob {
					s.Volumes[i].Source = "control-key"
				}
			}
			p.Services["control"] = s
		},
		"governance mounts the key": func(p *types.Project) {
			s := p.Services["governance"]
			s.Volumes = append(slices.Clone(s.Volumes), types.ServiceVolumeConfig{Type: types.VolumeTypeVolume, Source: secretKeyJob, Target: "/etc/steward/secret", ReadOnly: true})
			p.Services["governance"] = s
		},
		"execution starts before the key is made": func(p *types.Project) {
			s := p.Services["execution"]
			s.DependsOn = maps.Clone(s.DependsOn)
			delete(s.DependsOn, secretKeyJob)
			p.Services["execution"] = s
		},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := loadRepoCompose(t)
			spoil(p)
			if len(composeSecretKeyFaults(p)) == 0 {
				t.Error("no fault found")
			}
		})
	}
}

// composeSecretKeyFaults says what is wrong with the secret key in a
// compose project: the secret-key job writes it into a volume; control and
// execution each read that same file from that same volume, read-only, and
// start only once the job is done; no other service mounts the volume.
func composeSecretKeyFaults(p *types.Project) []string {
	var faults []string
	job, err := p.GetService(secretKeyJob)
	if err != nil {
		return []string{err.Error()}
	}
	out := flagValue(job.Command, "--out")
	if len(job.Command) == 0 || job.Command[0] != "secret-key" || out == "" {
		return []string{fmt.Sprintf("%s command %q is not secret-key --out=FILE", secretKeyJob, job.Command)}
	}
	if job.Restart != "no" {
		faults = append(faults, fmt.Sprintf("%s restart %q: want it run once (no)", secretKeyJob, job.Restart))
	}
	vol := composeVolumeAt(job, filepath.Dir(out))
	if vol == nil || vol.Type != types.VolumeTypeVolume {
		return append(faults, fmt.Sprintf("%s writes %s, where no named volume is mounted", secretKeyJob, out))
	}
	if _, ok := p.Volumes[vol.Source]; !ok {
		faults = append(faults, fmt.Sprintf("volume %s is not declared under top-level volumes", vol.Source))
	}
	for _, name := range secretKeyPlanes {
		s, err := p.GetService(name)
		if err != nil {
			faults = append(faults, err.Error())
			continue
		}
		path := flagValue(s.Command, "--secret-key")
		if path == "" {
			faults = append(faults, fmt.Sprintf("%s command %q passes no --secret-key: it would refuse or fail every action with secret parameters", name, s.Command))
			continue
		}
		v := composeVolumeAt(s, filepath.Dir(path))
		switch {
		case v == nil || v.Source != vol.Source:
			faults = append(faults, fmt.Sprintf("%s reads --secret-key %s from another place than volume %s: control and execution must share the key %s writes", name, path, vol.Source, secretKeyJob))
		case !v.ReadOnly:
			faults = append(faults, fmt.Sprintf("%s mounts volume %s writable; want read-only", name, vol.Source))
		case filepath.Base(path) != filepath.Base(out):
			faults = append(faults, fmt.Sprintf("%s reads %s, but %s writes %s", name, filepath.Base(path), secretKeyJob, filepath.Base(out)))
		}
		if dep, ok := s.DependsOn[secretKeyJob]; !ok || dep.Condition != types.ServiceConditionCompletedSuccessfully {
			faults = append(faults, fmt.Sprintf("%s depends_on = %v, want %s: %s", name, s.DependsOn, secretKeyJob, types.ServiceConditionCompletedSuccessfully))
		}
	}
	for name, s := range p.Services {
		if name == secretKeyJob || slices.Contains(secretKeyPlanes, name) {
			continue
		}
		if slices.ContainsFunc(s.Volumes, func(v types.ServiceVolumeConfig) bool { return v.Source == vol.Source }) {
			faults = append(faults, fmt.Sprintf("%s mounts the secret key's volume %s: only control and execution may hold it", name, vol.Source))
		}
	}
	slices.Sort(faults)
	return faults
}

// composeVolumeAt returns the mount of s at dir, or nil.
func composeVolumeAt(s types.ServiceConfig, dir string) *types.ServiceVolumeConfig {
	for i, v := range s.Volumes {
		if v.Target == dir {
			return &s.Volumes[i]
		}
	}
	return nil
}

func TestKubernetesSecretKey(t *testing.T) {
	for _, overlay := range overlays {
		for _, f := range k8sSecretKeyFaults(loadManifests(t, overlay)) {
			t.Errorf("overlays/%s: %s", overlay, f)
		}
	}
	for name, spoil := range map[string]func(m *manifests){
		"control without --secret-key": func(m *manifests) {
			c := &m.pod("control").Containers[0]
			c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--secret-key") })
		},
		"execution from another Secret": func(m *manifests) {
			for i, v := range m.pod("execution").Volumes {
				if v.Secret != nil && v.Secret.SecretName == secretKeySecret {
					m.pod("execution").Volumes[i].Secret.SecretName = "steward-execution-key"
				}
			}
		},
		"state mounts the key": func(m *manifests) {
			pod := m.pod("state")
			pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "secret-key", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretKeySecret}}})
		},
		"governance reads it into its environment": func(m *manifests) {
			c := &m.pod("governance").Containers[0]
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secretKeySecret}}})
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := loadManifests(t, "prod")
			spoil(m)
			if len(k8sSecretKeyFaults(m)) == 0 {
				t.Error("no fault found")
			}
		})
	}
}

// k8sSecretKeyFaults says what is wrong with the secret key in the
// manifests: control and execution each pass --secret-key, a file mounted
// read-only from the one Secret steward-secret-key; no other workload
// refers to that Secret, as a volume or in its environment.
func k8sSecretKeyFaults(m *manifests) []string {
	var faults []string
	for _, name := range secretKeyPlanes {
		p := m.pod(name)
		if p == nil || len(p.Containers) != 1 {
			faults = append(faults, "no one-container Deployment or StatefulSet "+name)
			continue
		}
		pod, c := *p, p.Containers[0]
		path := flagValue(c.Args, "--secret-key")
		if path == "" {
			faults = append(faults, fmt.Sprintf("%s args %q pass no --secret-key: it would refuse or fail every action with secret parameters", name, c.Args))
			continue
		}
		i := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == filepath.Dir(path) })
		if i < 0 || !c.VolumeMounts[i].ReadOnly {
			faults = append(faults, fmt.Sprintf("%s --secret-key %s: no read-only mount at %s", name, path, filepath.Dir(path)))
			continue
		}
		j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
		if j < 0 || pod.Volumes[j].Secret == nil || pod.Volumes[j].Secret.SecretName != secretKeySecret {
			faults = append(faults, fmt.Sprintf("%s --secret-key %s is not from Secret %s: control and execution must share that one key", name, path, secretKeySecret))
			continue
		}
		sec := pod.Volumes[j].Secret
		if len(sec.Items) != 1 || sec.Items[0].Key != "secret.key" || sec.Items[0].Path != filepath.Base(path) {
			faults = append(faults, fmt.Sprintf("%s: Secret %s items %+v, want only secret.key at %s", name, secretKeySecret, sec.Items, filepath.Base(path)))
		}
		if sec.DefaultMode != nil && *sec.DefaultMode&0o004 == 0 && (*sec.DefaultMode&0o040 == 0 || pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil) {
			faults = append(faults, fmt.Sprintf("%s: the secret key (mode %o) is not readable by the non-root user", name, *sec.DefaultMode))
		}
	}
	check := func(kind, name string, pod corev1.PodSpec) {
		if slices.Contains(secretKeyPlanes, name) {
			return
		}
		if refersTo(pod, secretKeySecret) {
			faults = append(faults, fmt.Sprintf("%s %s refers to Secret %s: only control and execution may hold the secret key", kind, name, secretKeySecret))
		}
	}
	for name, d := range m.deployments {
		check("Deployment", name, d.Spec.Template.Spec)
	}
	for name, s := range m.statefuls {
		check("StatefulSet", name, s.Spec.Template.Spec)
	}
	return faults
}

// refersTo reports whether pod reads Secret name: as a volume, a projected
// volume's source, or in a container's environment.
func refersTo(pod corev1.PodSpec, name string) bool {
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		if v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(s corev1.VolumeProjection) bool { return s.Secret != nil && s.Secret.Name == name }) {
			return true
		}
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if slices.ContainsFunc(c.EnvFrom, func(e corev1.EnvFromSource) bool { return e.SecretRef != nil && e.SecretRef.Name == name }) ||
			slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
				return e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name
			}) {
			return true
		}
	}
	return false
}
