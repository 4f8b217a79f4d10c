package engine

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/internal/golden"
)

func ttl(v int64) *int64 { return &v }

// backendSpecs are the pools whose member Pods are kept as golden YAML.
func backendSpecs() map[string]Spec {
	specs := map[string]Spec{
		"standard":   {Image: "ghcr.io/example/desktop:1", Size: 3},
		"kata":       {Image: "ghcr.io/example/desktop:1", Size: 3, Runtime: &Runtime{Backend: BackendStandard, RuntimeClassName: "kata"}},
		"privileged": {Image: "ghcr.io/example/desktop:1", Size: 3, Privileged: true},
		// Pod Security restricted: a non-root user that owns /data.
		"restricted": {Image: "ghcr.io/example/desktop:1", Size: 3, PodSecurity: PodSecurityRestricted, RunAsUser: 4242},
		// The image's own entrypoint over the persistent root.
		"privileged-init": {Image: "ghcr.io/example/desktop:1", Size: 3, Privileged: true, Init: true},
		"sandboxd": {Image: "ghcr.io/cocoonstack/sandbox/rt:24.04", Size: 3, Runtime: &Runtime{
			Backend: BackendSandboxd, Template: "ghcr.io/cocoonstack/sandbox/rt:24.04", Net: "none", Size: "small", TTLSeconds: ttl(3600)}},
		"cocoon": {Image: "ubuntu-dev-base", Size: 3, Runtime: &Runtime{Backend: BackendCocoon, Image: "ubuntu-dev-base"}},
	}
	for k, s := range specs {
		s.Default()
		specs[k] = s
	}
	return specs
}

func TestPodGolden(t *testing.T) {
	for name, spec := range backendSpecs() {
		t.Run(name, func(t *testing.T) {
			got, err := yaml.Marshal(BuildPod("vdi", "desk", 2, spec))
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "pods", name+".yaml"), string(got))
		})
	}
}

// TestPodMatchesSpecExamples checks the built Pods field by field against the
// two example manifests of runtime-backends.md.
func TestPodMatchesSpecExamples(t *testing.T) {
	specs := backendSpecs()
	providerTol := corev1.Toleration{Key: "virtual-kubelet.io/provider", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name         string
		nodeSelector map[string]string
		annotations  map[string]string
	}{
		{"sandboxd", map[string]string{"sandbox.cocoonstack.io/runtime": "sandboxd"}, map[string]string{
			"sandbox.cocoonstack.io/runtime":     "sandboxd",
			"sandbox.cocoonstack.io/template":    "ghcr.io/cocoonstack/sandbox/rt:24.04",
			"sandbox.cocoonstack.io/net":         "none",
			"sandbox.cocoonstack.io/size":        "small",
			"sandbox.cocoonstack.io/ttl-seconds": "3600",
		}},
		{"cocoon", map[string]string{"cocoonstack.io/pool": "default"}, map[string]string{
			"vm.cocoonstack.io/name":           "vdi-vdi-desk-2-ddd72194c1",
			"cocoonset.cocoonstack.io/managed": "true",
			"cocoonset.cocoonstack.io/mode":    "run",
			"cocoonset.cocoonstack.io/image":   "ubuntu-dev-base",
			"cocoonset.cocoonstack.io/os":      "linux",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := BuildPod("vdi", "desk", 2, specs[tc.name])
			if len(pod.Spec.NodeSelector) != len(tc.nodeSelector) {
				t.Errorf("nodeSelector = %v, want %v", pod.Spec.NodeSelector, tc.nodeSelector)
			}
			for k, v := range tc.nodeSelector {
				if pod.Spec.NodeSelector[k] != v {
					t.Errorf("nodeSelector[%s] = %q, want %q", k, pod.Spec.NodeSelector[k], v)
				}
			}
			if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0] != providerTol {
				t.Errorf("tolerations = %+v, want exactly %+v", pod.Spec.Tolerations, providerTol)
			}
			for k, v := range tc.annotations {
				if pod.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, pod.Annotations[k], v)
				}
			}
			if pod.Spec.RuntimeClassName != nil {
				t.Errorf("runtimeClassName set to %q for a virtual-node backend", *pod.Spec.RuntimeClassName)
			}
			if pod.Spec.Containers[0].Image != specs[tc.name].Image {
				t.Errorf("image = %q", pod.Spec.Containers[0].Image)
			}
			tsc := pod.Spec.TopologySpreadConstraints
			if len(tsc) != 1 || tsc[0].TopologyKey != "kubernetes.io/hostname" || tsc[0].LabelSelector.MatchLabels[LabelPool] != "desk" {
				t.Errorf("topology spread = %+v, want hostname spread on the pool label", tsc)
			}
		})
	}
	// Two members never share a cocoon VM name.
	a := BuildPod("vdi", "desk", 1, specs["cocoon"]).Annotations[CocoonAnnotationVMName]
	b := BuildPod("vdi", "desk", 2, specs["cocoon"]).Annotations[CocoonAnnotationVMName]
	if a == b {
		t.Fatalf("members 1 and 2 share the VM name %q", a)
	}
	// ttl-seconds absent when not set.
	noTTL := specs["sandboxd"]
	rt := *noTTL.Runtime
	rt.TTLSeconds = nil
	noTTL.Runtime = &rt
	if v, ok := BuildPod("vdi", "desk", 1, noTTL).Annotations[SandboxdAnnotationTTL]; ok {
		t.Fatalf("ttl-seconds written (%q) although not set", v)
	}
	zero := specs["sandboxd"]
	rt0 := *zero.Runtime
	rt0.TTLSeconds = ttl(0)
	zero.Runtime = &rt0
	if v := BuildPod("vdi", "desk", 1, zero).Annotations[SandboxdAnnotationTTL]; v != "0" {
		t.Fatalf("explicit ttl 0 written as %q, want \"0\"", v)
	}
}
