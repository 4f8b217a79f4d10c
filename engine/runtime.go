package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Runtime backends of a pool (runtime-backends.md).
const (
	BackendStandard = "standard"
	BackendSandboxd = "sandboxd"
	BackendCocoon   = "cocoon"
)

// Keys of the runtime-backends contract.
const (
	ProviderTaintKey = "virtual-kubelet.io/provider"

	SandboxdNodeLabel          = "sandbox.cocoonstack.io/runtime"
	SandboxdAnnotationRuntime  = "sandbox.cocoonstack.io/runtime"
	SandboxdAnnotationTemplate = "sandbox.cocoonstack.io/template"
	SandboxdAnnotationNet      = "sandbox.cocoonstack.io/net"
	SandboxdAnnotationSize     = "sandbox.cocoonstack.io/size"
	SandboxdAnnotationTTL      = "sandbox.cocoonstack.io/ttl-seconds"
	SandboxdAnnotationClaimID  = "sandbox.cocoonstack.io/claim-id"

	CocoonNodeLabel          = "cocoonstack.io/pool"
	CocoonAnnotationVMName   = "vm.cocoonstack.io/name"
	CocoonAnnotationManaged  = "cocoonset.cocoonstack.io/managed"
	CocoonAnnotationMode     = "cocoonset.cocoonstack.io/mode"
	CocoonAnnotationImage    = "cocoonset.cocoonstack.io/image"
	CocoonAnnotationOS       = "cocoonset.cocoonstack.io/os"
	CocoonDefaultPool        = "default"
	CocoonModeRun            = "run"
	CocoonModeClone          = "clone"
	CocoonDefaultOS          = "linux"
	sandboxdRuntimeValue     = "sandboxd"
	cocoonManagedValue       = "true"
	maxSandboxdTTLSeconds    = 86400
	sandboxdDefaultTTLReason = "absent means 86400 s; 0 takes sandboxd's five-minute default"
)

// Accepted classes of the sandboxd warm-pool key and of cocoon.
var (
	SandboxdNets  = []string{"none", "egress"}
	SandboxdSizes = []string{"small", "medium", "large"}
	CocoonModes   = []string{CocoonModeRun, CocoonModeClone}
	CocoonOSes    = []string{"linux", "windows", "macos"}
)

// Runtime selects the runtime backend of a pool's members (spec.runtime).
type Runtime struct {
	Backend string `json:"backend,omitempty"`
	// standard
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
	// sandboxd
	Template   string `json:"template,omitempty"`
	Net        string `json:"net,omitempty"`
	Size       string `json:"size,omitempty"`
	TTLSeconds *int64 `json:"ttlSeconds,omitempty"`
	// cocoon
	Pool  string `json:"pool,omitempty"`
	Image string `json:"image,omitempty"`
	Mode  string `json:"mode,omitempty"`
	OS    string `json:"os,omitempty"`
}

// Default fills in the backend and the cocoon defaults.
func (r *Runtime) Default() {
	if r.Backend == "" {
		r.Backend = BackendStandard
	}
	if r.Backend == BackendCocoon {
		if r.Pool == "" {
			r.Pool = CocoonDefaultPool
		}
		if r.Mode == "" {
			r.Mode = CocoonModeRun
		}
		if r.OS == "" {
			r.OS = CocoonDefaultOS
		}
	}
}

// Validate rejects what the old admission mutator rejected, naming the field.
func (r *Runtime) Validate() error {
	only := func(backend string, fields map[string]bool) error {
		for name, set := range fields {
			if set {
				return &InvalidError{Field: "runtime." + name, Reason: fmt.Sprintf("is not used by backend %s", backend)}
			}
		}
		return nil
	}
	switch r.Backend {
	case BackendStandard, "":
		if r.RuntimeClassName != "" {
			if msg := dns1123Subdomain(r.RuntimeClassName); msg != "" {
				return &InvalidError{Field: "runtime.runtimeClassName", Value: r.RuntimeClassName, Reason: msg}
			}
		}
		return only(BackendStandard, map[string]bool{
			"template": r.Template != "", "net": r.Net != "", "size": r.Size != "", "ttlSeconds": r.TTLSeconds != nil,
			"pool": r.Pool != "", "image": r.Image != "", "mode": r.Mode != "", "os": r.OS != "",
		})
	case BackendSandboxd:
		if r.Template == "" {
			return &InvalidError{Field: "runtime.template", Reason: "is required for backend sandboxd (the sandboxd pool template)"}
		}
		if r.Net != "" && !oneOf(r.Net, SandboxdNets) {
			return &InvalidError{Field: "runtime.net", Value: r.Net, Reason: fmt.Sprintf("must be one of %v (empty takes sandboxd's default)", SandboxdNets)}
		}
		if r.Size != "" && !oneOf(r.Size, SandboxdSizes) {
			return &InvalidError{Field: "runtime.size", Value: r.Size, Reason: fmt.Sprintf("must be one of %v (empty takes sandboxd's default)", SandboxdSizes)}
		}
		if r.TTLSeconds != nil && *r.TTLSeconds < 0 {
			return &InvalidError{Field: "runtime.ttlSeconds", Value: strconv.FormatInt(*r.TTLSeconds, 10), Reason: "must not be negative (" + sandboxdDefaultTTLReason + ")"}
		}
		if r.TTLSeconds != nil && *r.TTLSeconds > maxSandboxdTTLSeconds {
			return &InvalidError{Field: "runtime.ttlSeconds", Value: strconv.FormatInt(*r.TTLSeconds, 10),
				Reason: fmt.Sprintf("must be at most %d: sandboxd's maximum for an ordinary claim", maxSandboxdTTLSeconds)}
		}
		return only(BackendSandboxd, map[string]bool{
			"runtimeClassName": r.RuntimeClassName != "", "pool": r.Pool != "", "image": r.Image != "", "mode": r.Mode != "", "os": r.OS != "",
		})
	case BackendCocoon:
		if r.Image == "" {
			return &InvalidError{Field: "runtime.image", Reason: "is required for backend cocoon (the image in the Cocoon image library)"}
		}
		if r.Pool != "" {
			if msg := labelValue(r.Pool); msg != "" {
				return &InvalidError{Field: "runtime.pool", Value: r.Pool, Reason: msg}
			}
		}
		if r.Mode != "" && !oneOf(r.Mode, CocoonModes) {
			return &InvalidError{Field: "runtime.mode", Value: r.Mode, Reason: fmt.Sprintf("must be one of %v", CocoonModes)}
		}
		if r.OS != "" && !oneOf(r.OS, CocoonOSes) {
			return &InvalidError{Field: "runtime.os", Value: r.OS, Reason: fmt.Sprintf("must be one of %v", CocoonOSes)}
		}
		return only(BackendCocoon, map[string]bool{
			"runtimeClassName": r.RuntimeClassName != "", "template": r.Template != "", "net": r.Net != "", "size": r.Size != "", "ttlSeconds": r.TTLSeconds != nil,
		})
	default:
		return &InvalidError{Field: "runtime.backend", Value: r.Backend, Reason: "must be one of standard, sandboxd, cocoon"}
	}
}

// Warnings returns advice that does not stop an apply: a sandboxd template that
// differs from the container image claims from a pool keyed by the template.
func (s Spec) Warnings() []string {
	var w []string
	if s.Runtime != nil && s.Runtime.Backend == BackendSandboxd && s.Runtime.Template != "" && s.Runtime.Template != s.Image {
		w = append(w, fmt.Sprintf("runtime.template %q differs from image %q: sandboxd claims by template, so members run the template's microVM; keep them equal unless the warm pool is built from a different reference", s.Runtime.Template, s.Image))
	}
	return append(w, s.cidrWarnings()...)
}

// BackendName returns the pool's backend, "standard" when unset.
func (s Spec) BackendName() string {
	if s.Runtime == nil || s.Runtime.Backend == "" {
		return BackendStandard
	}
	return s.Runtime.Backend
}

// Limits of a cocoon VM name (vm.cocoonstack.io/name).
const (
	// CocoonVMNameMaxLength: cocoon takes VM names matching
	// [a-zA-Z0-9][a-zA-Z0-9._-]{0,62}, and vk-cocoon writes the name into a
	// cloned guest's /etc/hostname; a DNS-1123 label of at most 63
	// characters is valid for both.
	CocoonVMNameMaxLength = 63
	cocoonVMNamePrefix    = "vdi-"
	cocoonVMDigestLength  = 10
)

// CocoonVMName is the VM name of a member in a namespace. vk-cocoon lets a
// Pod that names a live VM adopt it, so the name is unique for every
// (namespace, member) pair: a readable part, vdi-<namespace>-<member>, then
// "-" and the first 10 hex digits of the SHA-256 of "<namespace>/<member>".
// The digest tells apart the pairs whose readable parts are equal (namespace
// a-b with pool c, and namespace a with pool b-c, both read vdi-a-b-c-1).
// The whole is a DNS-1123 label of at most CocoonVMNameMaxLength characters:
// when the readable part does not fit, the namespace is cut (the member
// stays whole, as it is what an operator looks for on the node). Two names
// are equal only when their readable parts and their digests are.
func CocoonVMName(namespace, member string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + member))
	digest := hex.EncodeToString(sum[:])[:cocoonVMDigestLength]
	room := CocoonVMNameMaxLength - len(cocoonVMNamePrefix) - 1 - cocoonVMDigestLength
	readable := member
	if len(readable) > room {
		readable = readable[:room] // longer than any member name apply allows
	} else if nsRoom := room - len(member) - 1; nsRoom > 0 {
		ns := namespace
		if len(ns) > nsRoom {
			ns = ns[:nsRoom]
		}
		if ns = strings.TrimRight(ns, "-."); ns != "" {
			readable = ns + "-" + member
		}
	}
	readable = strings.TrimRight(readable, "-.")
	return cocoonVMNamePrefix + readable + "-" + digest
}

// applyRuntime writes the backend's node selector, toleration, annotations and
// runtime class into a member Pod.
func (r *Runtime) applyRuntime(pod *corev1.Pod, namespace string) {
	providerToleration := corev1.Toleration{Key: ProviderTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	switch r.Backend {
	case BackendSandboxd:
		pod.Spec.NodeSelector = map[string]string{SandboxdNodeLabel: sandboxdRuntimeValue}
		pod.Spec.Tolerations = []corev1.Toleration{providerToleration}
		a := pod.Annotations
		a[SandboxdAnnotationRuntime] = sandboxdRuntimeValue
		a[SandboxdAnnotationTemplate] = r.Template
		if r.Net != "" {
			a[SandboxdAnnotationNet] = r.Net
		}
		if r.Size != "" {
			a[SandboxdAnnotationSize] = r.Size
		}
		if r.TTLSeconds != nil {
			a[SandboxdAnnotationTTL] = strconv.FormatInt(*r.TTLSeconds, 10)
		}
	case BackendCocoon:
		pool := r.Pool
		if pool == "" {
			pool = CocoonDefaultPool
		}
		pod.Spec.NodeSelector = map[string]string{CocoonNodeLabel: pool}
		pod.Spec.Tolerations = []corev1.Toleration{providerToleration}
		a := pod.Annotations
		a[CocoonAnnotationVMName] = CocoonVMName(namespace, pod.Name)
		a[CocoonAnnotationManaged] = cocoonManagedValue
		a[CocoonAnnotationMode] = orDefault(r.Mode, CocoonModeRun)
		a[CocoonAnnotationImage] = r.Image
		a[CocoonAnnotationOS] = orDefault(r.OS, CocoonDefaultOS)
	default:
		if r.RuntimeClassName != "" {
			rc := r.RuntimeClassName
			pod.Spec.RuntimeClassName = &rc
		}
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}
