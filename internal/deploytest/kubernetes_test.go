package deploytest

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcexport/collector/internal/config"
	"github.com/svcexport/collector/internal/telemetry"
)

const k8sDir = "deploy/kubernetes"

// k8sBase is the kustomize base as the cluster would get it.
type k8sBase struct {
	kust      map[string]any
	sts, svc  map[string]any
	cm        map[string]any // from configMapGenerator (name without the hash kustomize adds)
	container map[string]any
	cfg       config.Config
	cfgPath   string // the --config the container runs with
}

// builtinGroups are the API groups a plain cluster serves without CRDs.
var builtinGroups = map[string]bool{"v1": true, "apps/v1": true, "batch/v1": true, "policy/v1": true,
	"networking.k8s.io/v1": true, "rbac.authorization.k8s.io/v1": true, "autoscaling/v2": true}

// k8sOptional are the files of deploy/kubernetes that are neither resources
// nor generator inputs of the base (components/ holds kustomize components
// for overlays, which deploy/helm/test builds).
var k8sOptional = map[string]bool{"servicemonitor.yaml": true, "components": true}

// loadK8s reads the base as kustomize would: the files kustomization.yaml
// lists as resources, and the ConfigMap its configMapGenerator makes from
// collector.yaml. (deploy/helm/test builds it with kustomize itself.)
func loadK8s(t *testing.T) k8sBase {
	t.Helper()
	var b k8sBase
	b.kust = yamlDoc(t, k8sDir+"/kustomization.yaml")
	if str(b.kust, "kind") != "Kustomization" {
		t.Fatalf("kustomization.yaml is not a Kustomization")
	}
	used := map[string]bool{"kustomization.yaml": true}
	for _, r := range list(b.kust, "resources") {
		name, _ := r.(string)
		used[name] = true
		for _, o := range yamlDocs(t, k8sDir+"/"+name, read(t, k8sDir+"/"+name)) {
			if str(o, "apiVersion") == "" || str(o, "kind") == "" {
				t.Errorf("%s: a document without apiVersion and kind", name)
			}
			if av := str(o, "apiVersion"); !builtinGroups[av] {
				t.Errorf("kustomization.yaml lists %s, whose %s %s needs a CRD: keep it out of the default resources", name, av, str(o, "kind"))
			}
			switch str(o, "kind") {
			case "StatefulSet":
				b.sts = o
			case "Service":
				b.svc = o
			case "ConfigMap":
				t.Errorf("%s: a ConfigMap resource keeps its name when it changes, so the pod does not roll: generate it (configMapGenerator)", name)
			case "Secret":
				t.Errorf("%s: a Secret in the base overwrites the operator's real one on every apply -k: create it out of band (docs/kubernetes.md)", name)
			}
		}
	}
	if get(b.kust, "secretGenerator") != nil {
		t.Errorf("kustomization.yaml: a secretGenerator needs secrets in files next to the base; docs/kubernetes.md has the Secret created with kubectl")
	}
	if get(b.kust, "generatorOptions.disableNameSuffixHash") == true {
		t.Errorf("kustomization.yaml: generatorOptions.disableNameSuffixHash: a changed config would not roll the pod")
	}
	for _, g := range list(b.kust, "configMapGenerator") {
		if b.cm != nil {
			t.Fatalf("kustomization.yaml: more than one configMapGenerator")
		}
		if get(g, "options.disableNameSuffixHash") == true {
			t.Errorf("configMapGenerator %s: disableNameSuffixHash: a changed config would not roll the pod", str(g, "name"))
		}
		if get(g, "envs") != nil || get(g, "literals") != nil {
			t.Errorf("configMapGenerator %s: only files are checked", str(g, "name"))
		}
		data := map[string]any{}
		for _, f := range list(g, "files") {
			key, file, ok := strings.Cut(str(f, ""), "=")
			if !ok {
				file, key = key, path.Base(key)
			}
			used[file] = true
			data[key] = string(read(t, k8sDir+"/"+file))
		}
		b.cm = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": str(g, "name")}, "data": data}
	}
	files, err := filepath.Glob(filepath.Join(root(t), k8sDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if name := filepath.Base(f); !used[name] && !k8sOptional[name] {
			t.Errorf("%s/%s is neither listed in kustomization.yaml nor a known optional file", k8sDir, name)
		}
	}
	if b.sts == nil || b.svc == nil || b.cm == nil {
		t.Fatalf("the base needs a StatefulSet and a Service among its resources, and a configMapGenerator")
	}
	for _, c := range list(b.sts, "spec.template.spec.containers") {
		if str(c, "name") == "collector" {
			b.container, _ = c.(map[string]any)
		}
	}
	if b.container == nil {
		t.Fatal("statefulset.yaml: no container named collector")
	}

	// The command: the image's entrypoint unless the manifest overrides it.
	args := wantEntrypoint
	if cmd := list(b.container, "command"); cmd != nil {
		args = nil
		for _, a := range append(cmd, list(b.container, "args")...) {
			args = append(args, str(a, ""))
		}
	} else if extra := list(b.container, "args"); extra != nil {
		for _, a := range extra {
			args = append(args, str(a, ""))
		}
	}
	b.cfgPath = checkRunArgs(t, "statefulset.yaml container collector", args[1:])

	// The configuration file the container finds at cfgPath.
	text := ""
	for _, vm := range list(b.container, "volumeMounts") {
		mp := str(vm, "mountPath")
		if !underDir(b.cfgPath, mp) {
			continue
		}
		vol := volume(b.sts, str(vm, "name"))
		cmName := str(vol, "configMap.name")
		if cmName == "" {
			t.Fatalf("statefulset.yaml: %s is mounted from volume %s, not a ConfigMap", b.cfgPath, str(vm, "name"))
		}
		if cmName != str(b.cm, "metadata.name") {
			t.Fatalf("statefulset.yaml: volume %s uses ConfigMap %q, the base generates %q", str(vm, "name"), cmName, str(b.cm, "metadata.name"))
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(b.cfgPath, mp), "/")
		key := rel
		for _, it := range list(vol, "configMap.items") {
			if str(it, "path") == rel {
				key = str(it, "key")
			}
		}
		if v, ok := mapAt(b.cm, "data")[key]; ok {
			text, _ = v.(string)
		}
		if text == "" {
			t.Fatalf("ConfigMap %s has no key %q for %s", cmName, key, b.cfgPath)
		}
	}
	if text == "" {
		t.Fatalf("statefulset.yaml: nothing is mounted at the config path %s", b.cfgPath)
	}
	b.cfg = mustLoad(t, k8sDir+"/collector.yaml", []byte(text), k8sEnv(t, b))
	return b
}

func volume(sts map[string]any, name string) map[string]any {
	for _, v := range list(sts, "spec.template.spec.volumes") {
		if str(v, "name") == name {
			m, _ := v.(map[string]any)
			return m
		}
	}
	return nil
}

// k8sSecretName is the Secret docs/kubernetes.md has the operator create.
const k8sSecretName = "collector"

// k8sEnv is the environment the container gets: literal values, a
// placeholder for each key of the operator's Secret (every reference
// checked against the keys docs/kubernetes.md documents), and values from the
// generated ConfigMap.
func k8sEnv(t *testing.T, b k8sBase) map[string]string {
	t.Helper()
	documented := docSecretKeys(t)
	env := map[string]string{}
	for _, e := range list(b.container, "env") {
		name := str(e, "name")
		switch {
		case get(e, "valueFrom.secretKeyRef") != nil:
			ref := mapAt(e, "valueFrom.secretKeyRef")
			if str(ref, "name") != k8sSecretName {
				t.Errorf("statefulset.yaml: env %s reads Secret %q, docs/kubernetes.md creates %q", name, str(ref, "name"), k8sSecretName)
			}
			if _, ok := documented.all[str(ref, "key")]; !ok {
				t.Errorf("statefulset.yaml: env %s reads Secret key %s, which the Kubernetes section of docs/kubernetes.md does not document", name, str(ref, "key"))
			}
			env[name] = "placeholder-" + str(ref, "key")
		case get(e, "valueFrom.configMapKeyRef") != nil:
			ref := mapAt(e, "valueFrom.configMapKeyRef")
			v, ok := mapAt(b.cm, "data")[str(ref, "key")]
			if !ok || str(ref, "name") != str(b.cm, "metadata.name") {
				t.Errorf("statefulset.yaml: env %s refers to ConfigMap %s key %s, which the base does not generate", name, str(ref, "name"), str(ref, "key"))
				continue
			}
			env[name] = str(v, "")
		case get(e, "valueFrom") != nil:
			t.Errorf("statefulset.yaml: env %s: only secretKeyRef and configMapKeyRef are checked", name)
		default:
			env[name] = str(e, "value")
		}
	}
	for _, ef := range list(b.container, "envFrom") {
		t.Errorf("statefulset.yaml: envFrom %v: list the variables one by one so they can be checked", ef)
	}
	return env
}

// docSection returns a section of a user's document, from its heading
// ("## Kubernetes" of docs/kubernetes.md) to the next heading.
func docSection(t *testing.T, file, heading string) string {
	t.Helper()
	doc := string(read(t, file))
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no %q section", file, heading)
	}
	sec := doc[i+len(heading)+2:]
	if j := regexp.MustCompile(`(?m)^##+ `).FindStringIndex(sec); j != nil {
		sec = sec[:j[0]]
	}
	return sec
}

type secretDocs struct {
	command map[string]bool     // keys of docs/kubernetes.md's `kubectl create secret generic collector`
	all     map[string]struct{} // keys the section names at all (command or `key` in the text)
}

// docSecretKeys returns the Secret keys the Kubernetes section of docs/kubernetes.md
// documents: those of its `kubectl ... create secret generic collector`
// command, and any other `key` it names in backquotes next to them.
func docSecretKeys(t *testing.T) secretDocs {
	t.Helper()
	sec := docSection(t, "docs/kubernetes.md", "## Kubernetes")
	cmd := regexp.MustCompile(`kubectl (?:-n \S+ )?create secret generic (\S+)((?:[^\n]*\\\n)*[^\n]*)`).FindStringSubmatch(sec)
	if cmd == nil {
		t.Fatalf("docs/kubernetes.md, Kubernetes: no `kubectl create secret generic` command")
	}
	if cmd[1] != k8sSecretName {
		t.Errorf("docs/kubernetes.md, Kubernetes: the command creates Secret %q, the StatefulSet reads %q", cmd[1], k8sSecretName)
	}
	d := secretDocs{command: map[string]bool{}, all: map[string]struct{}{}}
	for _, m := range regexp.MustCompile(`--from-(?:literal|file)=([A-Za-z0-9._-]+)=`).FindAllStringSubmatch(cmd[2], -1) {
		d.command[m[1]] = true
		d.all[m[1]] = struct{}{}
	}
	for _, m := range regexp.MustCompile("`([a-z0-9]+(?:-[a-z0-9]+)+)`").FindAllStringSubmatch(sec, -1) {
		d.all[m[1]] = struct{}{}
	}
	if len(d.command) == 0 {
		t.Fatalf("docs/kubernetes.md, Kubernetes: the create secret command sets no key")
	}
	return d
}

// k8sSecretFiles maps each Secret key that the loaded configuration reads
// as a file (api.secret_file, edge.token_file: read again at every renewal
// and refusal, docs/api.md C1, C6) to the mount path of its volume. It
// checks that the file is on a read-only volume of the operator's Secret,
// mounted without subPath (the kubelet never updates a subPath mount, so a
// rotated Secret would not reach the file) and group-readable for the
// non-root user.
func k8sSecretFiles(t *testing.T, b k8sBase) map[string]string {
	t.Helper()
	out := map[string]string{}
	for key, p := range map[string]string{"api.secret_file": b.cfg.API.SecretFile, "edge.token_file": b.cfg.Edge.TokenFile} {
		if p == "" {
			continue
		}
		var mount map[string]any
		for _, vm := range list(b.container, "volumeMounts") {
			if underDir(p, str(vm, "mountPath")) {
				mount, _ = vm.(map[string]any)
			}
		}
		if mount == nil {
			t.Errorf("statefulset.yaml: %s %s is on no volume of the pod", key, p)
			continue
		}
		if str(mount, "subPath") != "" || str(mount, "subPathExpr") != "" {
			t.Errorf("statefulset.yaml: %s %s: volume %s is mounted with subPath, which the kubelet never updates", key, p, str(mount, "name"))
		}
		if get(mount, "readOnly") != true {
			t.Errorf("statefulset.yaml: %s %s: volume %s is not read-only", key, p, str(mount, "name"))
		}
		vol := volume(b.sts, str(mount, "name"))
		if str(vol, "secret.secretName") != k8sSecretName {
			t.Errorf("statefulset.yaml: %s %s: volume %s is not the Secret %s", key, p, str(mount, "name"), k8sSecretName)
			continue
		}
		if mode, ok := get(vol, "secret.defaultMode").(int); !ok || mode&0o040 == 0 {
			t.Errorf("statefulset.yaml: volume %s: defaultMode %v is not group-readable (the collector runs in the fsGroup)", str(mount, "name"), get(vol, "secret.defaultMode"))
		}
		k := strings.TrimPrefix(path.Clean(p), path.Clean(str(mount, "mountPath"))+"/")
		for _, it := range list(vol, "secret.items") {
			if str(it, "path") == k {
				k = str(it, "key")
			}
		}
		out[k] = str(mount, "mountPath")
	}
	return out
}

func TestKubernetesSecretIsTheOperatorsAndDocumented(t *testing.T) {
	b := loadK8s(t) // fails when the mounted configuration does not load
	docs := docSecretKeys(t)
	reads := map[string]bool{}
	for _, e := range list(b.container, "env") {
		if ref := mapAt(e, "valueFrom.secretKeyRef"); ref != nil {
			reads[str(ref, "key")] = true
			if get(ref, "optional") != true && !docs.command[str(ref, "key")] {
				t.Errorf("statefulset.yaml: Secret key %s is required (not optional), but the create secret command of docs/kubernetes.md does not set it", str(ref, "key"))
			}
		}
	}
	// The files the configuration names: the collector needs each.
	for k := range k8sSecretFiles(t, b) {
		reads[k] = true
		if !docs.command[k] {
			t.Errorf("collector.yaml and statefulset.yaml read Secret key %s as a file, but the create secret command of docs/kubernetes.md does not set it", k)
		}
	}
	for k := range docs.command {
		if !reads[k] {
			t.Errorf("docs/kubernetes.md, Kubernetes: the create secret command sets %s, which the StatefulSet does not read", k)
		}
	}
	// The kustomization's own comment gives the same command.
	kust := string(read(t, k8sDir+"/kustomization.yaml"))
	for k := range docs.command {
		if !strings.Contains(kust, "--from-literal="+k+"=") {
			t.Errorf("kustomization.yaml's header does not create Secret key %s as docs/kubernetes.md does", k)
		}
	}
}

func TestKubernetesStatefulSetRunsOneCollectorWithItsCheckpointOnAVolume(t *testing.T) {
	b := loadK8s(t)
	if r, ok := get(b.sts, "spec.replicas").(int); !ok || r != 1 {
		t.Errorf("statefulset.yaml: replicas = %v, want 1 (bbolt has one writer; the budget is per user)", get(b.sts, "spec.replicas"))
	}
	if str(b.sts, "spec.serviceName") != str(b.svc, "metadata.name") {
		t.Errorf("statefulset.yaml: serviceName %q is not the Service %q", str(b.sts, "spec.serviceName"), str(b.svc, "metadata.name"))
	}
	podLabels := mapAt(b.sts, "spec.template.metadata.labels")
	for k, v := range mapAt(b.sts, "spec.selector.matchLabels") {
		if podLabels[k] != v {
			t.Errorf("statefulset.yaml: selector %s=%v does not match the pod labels", k, v)
		}
	}
	// The checkpoint (and anything the sink writes locally) on the claim.
	claims := map[string]bool{}
	for _, c := range list(b.sts, "spec.volumeClaimTemplates") {
		claims[str(c, "metadata.name")] = true
		if str(c, "spec.resources.requests.storage") == "" {
			t.Errorf("statefulset.yaml: volumeClaimTemplate %s requests no storage", str(c, "metadata.name"))
		}
	}
	writable := func(p string) bool {
		for _, vm := range list(b.container, "volumeMounts") {
			if underDir(p, str(vm, "mountPath")) && claims[str(vm, "name")] {
				return true
			}
		}
		return false
	}
	if !writable(b.cfg.Checkpoint.Path) {
		t.Errorf("checkpoint.path %s is not on a volumeClaimTemplate mount", b.cfg.Checkpoint.Path)
	}
	if b.cfg.Sink.Type == config.SinkFile && !writable(b.cfg.Sink.File.Dir) {
		t.Errorf("sink.file.dir %s is not on a volumeClaimTemplate mount", b.cfg.Sink.File.Dir)
	}
	// A stop may take stop_timeout to drain, then again stop_timeout to shut
	// the sink down (app.Run), then 5s for the telemetry server.
	grace, _ := get(b.sts, "spec.template.spec.terminationGracePeriodSeconds").(int)
	need := 2*b.cfg.Pipeline.StopTimeout + 5*time.Second
	if time.Duration(grace)*time.Second <= need {
		t.Errorf("terminationGracePeriodSeconds %d must exceed 2 x pipeline.stop_timeout (%s) + 5s = %s", grace, b.cfg.Pipeline.StopTimeout, need)
	}
}

func TestKubernetesProbesAndPortsMatchTheMetricsServer(t *testing.T) {
	b := loadK8s(t)
	host, port, err := net.SplitHostPort(b.cfg.Metrics.Listen)
	if err != nil {
		t.Fatalf("metrics.listen %q: %v", b.cfg.Metrics.Listen, err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("metrics.listen %q: the kubelet and Prometheus cannot reach %s; listen on 0.0.0.0", b.cfg.Metrics.Listen, host)
	}
	ports := map[string]string{} // name -> number
	for _, p := range list(b.container, "ports") {
		ports[str(p, "name")] = str(p, "containerPort")
	}
	if ports["metrics"] != port {
		t.Errorf("container port \"metrics\" = %q, metrics.listen port = %s", ports["metrics"], port)
	}
	resolve := func(v string) string {
		if n, ok := ports[v]; ok {
			return n
		}
		return v
	}
	srv := telemetry.New("127.0.0.1:0", telemetry.NewRegistry("v", "c"), slog.New(slog.DiscardHandler))
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		p := mapAt(b.container, probe)
		if p == nil {
			t.Errorf("statefulset.yaml: no %s", probe)
			continue
		}
		if got := str(p, "httpGet.path"); got != want {
			t.Errorf("%s path %q, want %s", probe, got, want)
		}
		if got := resolve(str(p, "httpGet.port")); got != port {
			t.Errorf("%s port %q is not the metrics port %s", probe, str(p, "httpGet.port"), port)
		}
		// The collector's own handler serves the path.
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, str(p, "httpGet.path"), nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: the telemetry server answers %s with %d", probe, str(p, "httpGet.path"), rec.Code)
		}
	}
	// The Service reaches the metrics port of these pods.
	podLabels := mapAt(b.sts, "spec.template.metadata.labels")
	for k, v := range mapAt(b.svc, "spec.selector") {
		if podLabels[k] != v {
			t.Errorf("service.yaml: selector %s=%v does not match the pod labels", k, v)
		}
	}
	var svcPort map[string]any
	for _, p := range list(b.svc, "spec.ports") {
		if resolve(str(p, "targetPort")) == port {
			svcPort, _ = p.(map[string]any)
		}
	}
	if svcPort == nil {
		t.Errorf("service.yaml: no port targets the metrics port %s", port)
	}
	// The ServiceMonitor example selects that Service and port.
	for _, sm := range yamlDocs(t, k8sDir+"/servicemonitor.yaml", read(t, k8sDir+"/servicemonitor.yaml")) {
		for k, v := range mapAt(sm, "spec.selector.matchLabels") {
			if mapAt(b.svc, "metadata.labels")[k] != v {
				t.Errorf("servicemonitor.yaml: selector %s=%v does not match the Service's labels", k, v)
			}
		}
		for _, ep := range list(sm, "spec.endpoints") {
			if svcPort != nil && str(ep, "port") != str(svcPort, "name") {
				t.Errorf("servicemonitor.yaml: endpoint port %q is not the Service's metrics port %q", str(ep, "port"), str(svcPort, "name"))
			}
			if p := str(ep, "path"); p != "" && p != "/metrics" {
				t.Errorf("servicemonitor.yaml: path %q, want /metrics", p)
			}
		}
	}
}

func TestKubernetesPodIsLockedDownAndBounded(t *testing.T) {
	b := loadK8s(t)
	pod := mapAt(b.sts, "spec.template.spec.securityContext")
	ctr := mapAt(b.container, "securityContext")
	either := func(key string) any {
		if v := get(ctr, key); v != nil {
			return v
		}
		return get(pod, key)
	}
	for key, want := range map[string]any{
		"readOnlyRootFilesystem":   true,
		"allowPrivilegeEscalation": false,
	} {
		if get(ctr, key) != want {
			t.Errorf("container securityContext.%s = %v, want %v", key, get(ctr, key), want)
		}
	}
	if either("runAsNonRoot") != true {
		t.Errorf("securityContext.runAsNonRoot is not true")
	}
	if str(either("seccompProfile"), "type") != "RuntimeDefault" {
		t.Errorf("securityContext.seccompProfile.type is not RuntimeDefault")
	}
	if !slices.Contains(list(ctr, "capabilities.drop"), any("ALL")) {
		t.Errorf("container securityContext.capabilities.drop does not contain ALL")
	}
	if uid, ok := either("runAsUser").(int); ok && uid == 0 {
		t.Errorf("runAsUser 0")
	}
	for _, kind := range []string{"requests", "limits"} {
		for _, res := range []string{"cpu", "memory"} {
			if str(b.container, "resources."+kind+"."+res) == "" {
				t.Errorf("container resources.%s.%s is not set", kind, res)
			}
		}
	}
	limit := quantity(t, str(b.container, "resources.limits.memory"))
	request := quantity(t, str(b.container, "resources.requests.memory"))
	if request > limit {
		t.Errorf("memory request %d > limit %d", request, limit)
	}
	// The Go heap limit must leave room below the container's limit.
	for _, e := range list(b.container, "env") {
		if str(e, "name") == "GOMEMLIMIT" {
			if gl := quantity(t, strings.TrimSuffix(str(e, "value"), "B")); gl >= limit {
				t.Errorf("GOMEMLIMIT %s is not below limits.memory %s", str(e, "value"), str(b.container, "resources.limits.memory"))
			}
		}
	}
	// A read-only root: everything written must be on a volume.
	mounts := map[string]bool{}
	for _, vm := range list(b.container, "volumeMounts") {
		mounts[path.Clean(str(vm, "mountPath"))] = true
	}
	if !mounts[path.Dir(b.cfg.Checkpoint.Path)] {
		t.Errorf("the checkpoint directory %s is not a mount", path.Dir(b.cfg.Checkpoint.Path))
	}
}

// quantity parses a Kubernetes memory quantity (Ki, Mi, Gi, k, M, G or bytes).
func quantity(t *testing.T, q string) int64 {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?$`).FindStringSubmatch(q)
	if m == nil {
		t.Fatalf("memory quantity %q", q)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	mult := map[string]int64{"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m[2]]
	return n * mult
}
