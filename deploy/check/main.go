// Command check holds the deployment files of deploy/ to what they claim.
// It is a module of its own, so that the swarm module does not depend on
// Kubernetes.
//
//	go run . kubernetes ../kubernetes   # strict decoding into the Kubernetes API types, and the probes and drain
//	go run . compose ../compose.yaml    # strict decoding of the compose file
//	go run . podman ../compose.yaml SERVICE [NAME=VALUE]...
//	                                    # the podman run arguments of a service, one per line, with
//	                                    # host networking and the environment overridden by NAME=VALUE
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "kubernetes":
		err = checkKubernetes(os.Args[2])
	case len(os.Args) == 3 && os.Args[1] == "compose":
		_, err = loadCompose(os.Args[2])
	case len(os.Args) >= 4 && os.Args[1] == "podman":
		err = podmanArgs(os.Args[2], os.Args[3], os.Args[4:])
	default:
		err = fmt.Errorf("usage: check kubernetes DIR | compose FILE | podman FILE SERVICE [NAME=VALUE]...")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
}

// strict decodes one YAML document into v, refusing unknown and duplicate
// fields.
func strict(doc []byte, v any) error {
	return yaml.UnmarshalStrict(doc, v)
}

// manifests are the objects of a directory of Kubernetes manifests.
type manifests struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	configMaps  []*corev1.ConfigMap
	pdbs        []*policyv1.PodDisruptionBudget
}

func checkKubernetes(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no manifests in %s (%v)", dir, err)
	}
	var m manifests
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			if err := m.add(doc); err != nil {
				return fmt.Errorf("%s: document %d: %w", f, i+1, err)
			}
		}
	}
	if err := m.check(); err != nil {
		return err
	}
	fmt.Printf("kubernetes: %d files decoded strictly: %d deployment(s), %d service(s), %d config map(s), %d disruption budget(s)\n",
		len(files), len(m.deployments), len(m.services), len(m.configMaps), len(m.pdbs))
	return nil
}

func (m *manifests) add(doc []byte) error {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var err error
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		d := new(appsv1.Deployment)
		err = strict(doc, d)
		m.deployments = append(m.deployments, d)
	case "v1 Service":
		s := new(corev1.Service)
		err = strict(doc, s)
		m.services = append(m.services, s)
	case "v1 ConfigMap":
		c := new(corev1.ConfigMap)
		err = strict(doc, c)
		m.configMaps = append(m.configMaps, c)
	case "policy/v1 PodDisruptionBudget":
		p := new(policyv1.PodDisruptionBudget)
		err = strict(doc, p)
		m.pdbs = append(m.pdbs, p)
	default:
		return fmt.Errorf("unexpected object %s %s", tm.APIVersion, tm.Kind)
	}
	return err
}

// check holds the objects to what deploying a swarm needs.
func (m *manifests) check() error {
	if len(m.deployments) != 1 || len(m.services) == 0 || len(m.configMaps) == 0 || len(m.pdbs) == 0 {
		return fmt.Errorf("want one Deployment, a Service, a ConfigMap and a PodDisruptionBudget")
	}
	d := m.deployments[0]
	pod := d.Spec.Template
	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	if !sel.Matches(labels.Set(pod.Labels)) {
		return fmt.Errorf("deployment %s: its selector does not match its pods", d.Name)
	}
	for _, s := range m.services {
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			return fmt.Errorf("service %s selects no swarm pod", s.Name)
		}
	}
	for _, p := range m.pdbs {
		if p.Spec.MinAvailable == nil && p.Spec.MaxUnavailable == nil {
			return fmt.Errorf("disruption budget %s: no minAvailable or maxUnavailable", p.Name)
		}
		if !labels.SelectorFromSet(p.Spec.Selector.MatchLabels).Matches(labels.Set(pod.Labels)) {
			return fmt.Errorf("disruption budget %s selects no swarm pod", p.Name)
		}
	}
	if len(pod.Spec.Containers) != 1 {
		return fmt.Errorf("deployment %s: want one container", d.Name)
	}
	c := pod.Spec.Containers[0]
	if err := probe("readiness", c.ReadinessProbe, "/readyz"); err != nil {
		return err
	}
	if err := probe("liveness", c.LivenessProbe, "/healthz"); err != nil {
		return err
	}
	// The grace period covers the drain and the shutdown.
	drain, shutdown := flagDuration(c.Args, "--drain-delay", 0), flagDuration(c.Args, "--shutdown-timeout", 15*time.Second)
	if drain <= 0 {
		return fmt.Errorf("container %s: no --drain-delay: a node would stop listening as soon as it turns not ready", c.Name)
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < drain+shutdown+5*time.Second {
		return fmt.Errorf("terminationGracePeriodSeconds must cover --drain-delay %s + --shutdown-timeout %s + 5s", drain, shutdown)
	}
	// Secrets come from Secrets, swarm.yaml from the ConfigMap.
	secrets := 0
	for _, e := range c.Env {
		if e.Value != "" && strings.Contains(strings.ToLower(e.Name), "key") {
			return fmt.Errorf("env %s: a key written in the manifest; use a secretKeyRef", e.Name)
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secrets++
		}
	}
	if secrets == 0 {
		return fmt.Errorf("container %s: no environment variable from a Secret", c.Name)
	}
	file := flagValue(c.Args, "--file")
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name != v.Name || filepath.Join(vm.MountPath, filepath.Base(file)) != file {
				continue
			}
			for _, cm := range m.configMaps {
				if cm.Name == v.ConfigMap.Name && cm.Data[filepath.Base(file)] != "" {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("container %s: --file %q is not a ConfigMap's key mounted there", c.Name, file)
}

func probe(kind string, p *corev1.Probe, path string) error {
	if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path {
		return fmt.Errorf("the %s probe must GET %s", kind, path)
	}
	return nil
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func flagDuration(args []string, name string, def time.Duration) time.Duration {
	v := flagValue(args, name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return -1
	}
	return d
}

// compose is the part of the Compose specification deploy/compose.yaml
// uses; anything else in the file is refused.
type compose struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Volumes  map[string]struct{}       `json:"volumes"`
}

type composeService struct {
	Image       string            `json:"image"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	Volumes     []string          `json:"volumes"`
	Ports       []string          `json:"ports"`
	DependsOn   map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
	Healthcheck *struct {
		Test     []string `json:"test"`
		Interval string   `json:"interval"`
		Timeout  string   `json:"timeout"`
		Retries  int      `json:"retries"`
	} `json:"healthcheck"`
	StopGracePeriod string `json:"stop_grace_period"`
	Restart         string `json:"restart"`
}

func loadCompose(path string) (*compose, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c compose
	if err := strict(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	nodes := 0
	for name, s := range c.Services {
		for dep := range s.DependsOn {
			if _, ok := c.Services[dep]; !ok {
				return nil, fmt.Errorf("%s: service %s depends on unknown %s", path, name, dep)
			}
		}
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			continue
		}
		nodes++
		drain, shutdown := flagDuration(s.Command, "--drain-delay", 0), flagDuration(s.Command, "--shutdown-timeout", 15*time.Second)
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil || drain <= 0 || grace < drain+shutdown {
			return nil, fmt.Errorf("%s: service %s: stop_grace_period must cover --drain-delay and --shutdown-timeout", path, name)
		}
	}
	if nodes < 2 {
		return nil, fmt.Errorf("%s: want several swarm nodes, found %d", path, nodes)
	}
	fmt.Fprintf(os.Stderr, "compose: %s decoded strictly: %d services, %d swarm nodes\n", path, len(c.Services), nodes)
	return &c, nil
}

// podmanArgs prints the arguments of podman run for a service, one per
// line: host networking, its environment (${VAR} interpolated from this
// process's, then overridden by NAME=VALUE; --addr=ADDR replaces the
// address of its command), its bind mounts resolved against the file's
// directory, its image and command.
func podmanArgs(path, service string, overrides []string) error {
	c, err := loadCompose(path)
	if err != nil {
		return err
	}
	s, ok := c.Services[service]
	if !ok {
		return fmt.Errorf("%s: no service %s", path, service)
	}
	env := map[string]string{}
	for k, v := range s.Environment {
		env[k] = interpolate(v)
	}
	cmd := slices.Clone(s.Command)
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return fmt.Errorf("override %q: want NAME=VALUE", o)
		}
		if k == "--addr" {
			i := slices.Index(cmd, "--addr")
			if i < 0 || i+1 >= len(cmd) {
				return fmt.Errorf("service %s: no --addr to replace", service)
			}
			cmd[i+1] = v
			continue
		}
		env[k] = v
	}
	args := []string{"--name", c.Name + "-" + service, "--network", "host"}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "-e", k+"="+env[k])
	}
	for _, v := range s.Volumes {
		src, rest, _ := strings.Cut(v, ":")
		if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(path), src))
			if err != nil {
				return err
			}
			args = append(args, "-v", abs+":"+rest)
		}
	}
	args = append(args, s.Image)
	args = append(args, cmd...)
	for _, a := range args {
		fmt.Println(a)
	}
	return nil
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// interpolate expands ${VAR}, ${VAR:-default} and ${VAR:?message} as
// Compose does ("" for a missing ${VAR:?...}: the caller overrides it).
func interpolate(s string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		v, set := os.LookupEnv(m[1])
		if (m[2] == ":-" && v == "") || (m[2] == "-" && !set) {
			return m[3]
		}
		return v
	})
}
