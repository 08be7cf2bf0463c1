package helmtest

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHelmAndKustomizeDeployTheSamePod renders the chart with the kustomize
// base's config and compares what makes the pod work: image, command, ports,
// probes, security, resources, volumes, the Service and the config.
func TestHelmAndKustomizeDeployTheSamePod(t *testing.T) {
	k := kustomize(t, filepath.Join(root(t), k8sDir))
	h := mustRender(t, "collector", kustomizeConfigValues(t))
	kc, hc := container(t, "kustomize", k.sts), container(t, "helm", h.sts)
	same := func(what string, kv, hv any) {
		t.Helper()
		if !reflect.DeepEqual(kv, hv) {
			t.Errorf("%s differs:\n  kustomize: %+v\n  helm:      %+v", what, kv, hv)
		}
	}

	same("image", kc.Image, hc.Image)
	same("imagePullPolicy", kc.ImagePullPolicy, hc.ImagePullPolicy)
	same("command", kc.Command, hc.Command)
	same("args", kc.Args, hc.Args)
	same("the config path in the command", configArg(t, "kustomize", kc), configArg(t, "helm", hc))
	same("container ports", kc.Ports, hc.Ports)
	same("liveness probe", kc.LivenessProbe, hc.LivenessProbe)
	same("readiness probe", kc.ReadinessProbe, hc.ReadinessProbe)
	same("startup probe", kc.StartupProbe, hc.StartupProbe)
	same("container securityContext", kc.SecurityContext, hc.SecurityContext)
	same("pod securityContext", k.sts.Spec.Template.Spec.SecurityContext, h.sts.Spec.Template.Spec.SecurityContext)
	same("resources", quantities(kc.Resources), quantities(hc.Resources))
	same("GOMEMLIMIT", envValue(kc, "GOMEMLIMIT"), envValue(hc, "GOMEMLIMIT"))
	same("env names", envNames(kc), envNames(hc))
	same("Secret keys", secretKeysOptional(t, "kustomize", k), secretKeysOptional(t, "helm", h.objects))
	same("volume mounts", kc.VolumeMounts, hc.VolumeMounts)
	same("replicas", *k.sts.Spec.Replicas, *h.sts.Spec.Replicas)
	same("podManagementPolicy", k.sts.Spec.PodManagementPolicy, h.sts.Spec.PodManagementPolicy)
	same("updateStrategy", k.sts.Spec.UpdateStrategy, h.sts.Spec.UpdateStrategy)
	ks, hs := k.sts.Spec.Template.Spec, h.sts.Spec.Template.Spec
	same("terminationGracePeriodSeconds", ks.TerminationGracePeriodSeconds, hs.TerminationGracePeriodSeconds)
	same("automountServiceAccountToken", ks.AutomountServiceAccountToken, hs.AutomountServiceAccountToken)
	same("enableServiceLinks", ks.EnableServiceLinks, hs.EnableServiceLinks)
	same("volumes other than the ConfigMap", volumesBut(ks.Volumes, "config"), volumesBut(hs.Volumes, "config"))
	same("the config volume's items", configItems(ks.Volumes), configItems(hs.Volumes))
	scrape := func(a map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range a {
			if strings.HasPrefix(k, "prometheus.io/") {
				out[k] = v
			}
		}
		return out
	}
	same("prometheus.io annotations", scrape(k.sts.Spec.Template.Annotations), scrape(h.sts.Spec.Template.Annotations))
	claim := func(o objects) string {
		c := o.sts.Spec.VolumeClaimTemplates[0]
		return fmt.Sprintf("%s %v %s", c.Name, c.Spec.AccessModes, c.Spec.Resources.Requests.Storage())
	}
	same("volumeClaimTemplate", claim(k), claim(h.objects))
	mount := func(c corev1.Container) string {
		for _, vm := range c.VolumeMounts {
			if vm.Name == "data" {
				return vm.MountPath
			}
		}
		return ""
	}
	same("the checkpoint volume's mount path", mount(kc), mount(hc))

	// The Service, up to names and labels.
	same("Service type", k.svc.Spec.Type, h.svc.Spec.Type)
	same("Service clusterIP", k.svc.Spec.ClusterIP, h.svc.Spec.ClusterIP)
	same("Service publishNotReadyAddresses", k.svc.Spec.PublishNotReadyAddresses, h.svc.Spec.PublishNotReadyAddresses)
	same("Service ports", k.svc.Spec.Ports, h.svc.Spec.Ports)

	// The config: everything of the kustomize file reaches the chart's
	// ConfigMap unchanged (the chart's defaults add to it).
	_, ktext := mountedConfig(t, "kustomize", k)
	_, htext := mountedConfig(t, "helm", h.objects)
	kl, hl := leaves(configMap(t, "kustomize", ktext)), leaves(configMap(t, "helm", htext))
	for key, v := range kl {
		same("config "+key, v, hl[key])
	}
	for _, key := range []string{"checkpoint.path", "metrics.listen"} {
		if kl[key] == nil {
			t.Errorf("the kustomize config does not set %s", key)
		}
	}
}

// TestHelmDefaultsKeepTheKustomizeSettings checks what the chart's own
// defaults (not the config) share with the base: the values an operator
// would otherwise see drift apart.
func TestHelmDefaultsKeepTheKustomizeSettings(t *testing.T) {
	k := kustomize(t, filepath.Join(root(t), k8sDir))
	h := mustRender(t, "collector", nil)
	kc, hc := container(t, "kustomize", k.sts), container(t, "helm", h.sts)
	if !reflect.DeepEqual(quantities(kc.Resources), quantities(hc.Resources)) || envValue(kc, "GOMEMLIMIT") != envValue(hc, "GOMEMLIMIT") {
		t.Errorf("default resources/GOMEMLIMIT differ: kustomize %v %s, helm %v %s",
			quantities(kc.Resources), envValue(kc, "GOMEMLIMIT"), quantities(hc.Resources), envValue(hc, "GOMEMLIMIT"))
	}
	_, ktext := mountedConfig(t, "kustomize", k)
	_, htext := mountedConfig(t, "helm", h.objects)
	kl, hl := leaves(configMap(t, "kustomize", ktext)), leaves(configMap(t, "helm", htext))
	for _, key := range []string{"checkpoint.path", "metrics.listen", "pipeline.stop_timeout", "log.format"} {
		if !reflect.DeepEqual(kl[key], hl[key]) {
			t.Errorf("config %s: kustomize %v, helm default %v", key, kl[key], hl[key])
		}
	}
}

// quantities turns resources into comparable strings.
func quantities(r corev1.ResourceRequirements) map[string]string {
	out := map[string]string{}
	for kind, l := range map[string]corev1.ResourceList{"requests": r.Requests, "limits": r.Limits} {
		for name, q := range l {
			out[kind+"."+string(name)] = q.String()
		}
	}
	return out
}

func envNames(c corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}

// secretKeysOptional maps each Secret key the pod of o reads to how it
// reads it (secretRefs: a variable, or a file the config names) and whether
// it is optional.
func secretKeysOptional(t testing.TB, where string, o objects) map[string]string {
	t.Helper()
	_, text := mountedConfig(t, where, o)
	out := map[string]string{}
	for k, r := range secretRefs(t, o.sts, configMap(t, where, text)) {
		out[k] = fmt.Sprintf("%s optional=%v", r.via, r.optional)
	}
	return out
}

func volumesBut(vs []corev1.Volume, name string) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		if v.Name != name {
			out = append(out, v)
		}
	}
	return out
}

func configItems(vs []corev1.Volume) []corev1.KeyToPath {
	for _, v := range vs {
		if v.ConfigMap != nil {
			return v.ConfigMap.Items
		}
	}
	return nil
}
