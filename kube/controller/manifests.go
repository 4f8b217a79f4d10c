package controller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ctpool-tui/ctpool-tui/kube"
)

// Names and defaults of the deployment.
const (
	DefaultImage  = "ghcr.io/ctpool-tui/ctpool-tui:latest"
	AppName       = "ctpool-tui-reconciler"
	MetricsPort   = 9090
	nonRootUserID = 65532
)

// ManifestOptions choose what Manifests prints.
type ManifestOptions struct {
	Namespace string
	Image     string // default DefaultImage
	Replicas  int32  // default 2
	// AllNamespaces runs `reconcile --all-namespaces`: the rules go into a
	// ClusterRole bound by a ClusterRoleBinding, and the election Lease stays
	// in Namespace.
	AllNamespaces bool
	// NoNodes leaves out the reconciler's read of the nodes (NodeRules, a
	// ClusterRole: nodes are cluster-scoped), for one who may create no
	// ClusterRole. Without it the reconciler cannot tell a member whose node
	// is down, and replaces it like any other drifted or failed member.
	NoNodes bool
	// NodeSelector and Tolerations place the reconciler's Pods (e.g. on
	// system nodes, or a node pool of their own); none by default.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
}

// NodeRules let the reconciler watch the nodes (kube.OptionalPermissions), so
// that it waits for a down node instead of replacing its members.
var NodeRules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "watch"}}}

// BudgetRules let the reconciler cache the pools' PodDisruptionBudgets
// (kube.BudgetWatch), so that a pool at rest costs its reconcile no read.
var BudgetRules = []rbacv1.PolicyRule{{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"list", "watch"}}}

// Manifests returns what runs the reconciler in a namespace, in apply order:
// a ServiceAccount; the operator Role (rules derived from the API calls the
// operations make, kube.RoleObjects) plus the leader election's rules on its
// own Lease, and its RoleBinding to the ServiceAccount; a ClusterRole and
// ClusterRoleBinding that let it watch the nodes (unless NoNodes); and a Deployment of
// two replicas with leader election, metrics, probes, resources and a
// non-root, read-only-root security context.
//
// The Role and RoleBinding are named ctpool-tui-reconciler, not
// ctpool-tui-operator, so that applying them never rebinds the operator Role
// a person got from `ctpool-tui rbac`. With AllNamespaces they are a
// ClusterRole and a ClusterRoleBinding of that name, and the ClusterRole
// holds only the reconciler's rules (kube.ReconcilerActions): a grant in
// every namespace leaves out the operator's claims, console and logs.
func Manifests(o ManifestOptions) ([]runtime.Object, error) {
	if o.Namespace == "" {
		return nil, fmt.Errorf("manifests: no namespace")
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.Replicas <= 0 {
		o.Replicas = 2
	}
	labels := map[string]string{"app.kubernetes.io/name": "ctpool-tui", "app.kubernetes.io/component": "reconciler"}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: "ctpool-tui", Namespace: o.Namespace, Labels: labels},
	}
	role, binding, err := kube.RoleObjects("operator", o.Namespace, "ServiceAccount:"+o.Namespace+"/"+sa.Name)
	if err != nil {
		return nil, err
	}
	role.Name, role.Labels = AppName, labels
	role.Rules = append(append(append(role.Rules, LeaderElectionRules(LeaseName)...), EventRules...), BudgetRules...)
	binding.Name, binding.Labels, binding.RoleRef.Name = AppName, labels, AppName
	if !o.AllNamespaces {
		objs := []runtime.Object{sa, role, binding}
		if !o.NoNodes {
			// One per namespace: a ClusterRoleBinding is cluster-wide, and
			// a second namespace's reconciler must not take the first's.
			name := AppName + "-nodes-" + o.Namespace
			objs = append(objs, &rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				Rules:      NodeRules,
			}, &rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   binding.Subjects,
			})
		}
		return append(objs, deployment(o, labels, sa.Name)), nil
	}
	// In every namespace, grant only what the reconciler does.
	ps, err := kube.ActionPermissions(kube.ReconcilerActions...)
	if err != nil {
		return nil, err
	}
	crole := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: AppName, Labels: labels},
		Rules:      append(append(append(kube.Rules(ps), LeaderElectionRules(LeaseName)...), EventRules...), BudgetRules...),
	}
	if !o.NoNodes {
		crole.Rules = append(crole.Rules, NodeRules...)
	}
	cbinding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: AppName, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AppName},
		Subjects:   binding.Subjects,
	}
	return []runtime.Object{sa, crole, cbinding, deployment(o, labels, sa.Name)}, nil
}

// reconcilerArgs are the container's arguments. The namespace flag names
// the pools' namespace, or with allNamespaces the election Lease's.
// MemoryLimitSoft is the reconciler's GOMEMLIMIT: about 85% of its
// container's memory limit (256Mi), room for the runtime's own memory.
const MemoryLimitSoft = "220MiB"

func reconcilerArgs(allNamespaces bool) []string {
	scope := []string{"--all"}
	if allNamespaces {
		scope = []string{"--all-namespaces", "--leader-elect-namespace", "$(POD_NAMESPACE)"}
	}
	args := append([]string{"reconcile"}, scope...)
	return append(args, "--watch", "--leader-elect", "--metrics-addr", fmt.Sprintf(":%d", MetricsPort), "--namespace", "$(POD_NAMESPACE)")
}

func deployment(o ManifestOptions, labels map[string]string, sa string) *appsv1.Deployment {
	selector := map[string]string{"app.kubernetes.io/name": "ctpool-tui", "app.kubernetes.io/component": "reconciler"}
	probe := func(path string, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: path, Port: intstr.FromString("metrics"),
			}},
			PeriodSeconds: period, TimeoutSeconds: 2, FailureThreshold: 3,
		}
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
		}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: AppName, Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(o.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            sa,
					NodeSelector:                  o.NodeSelector,
					Tolerations:                   o.Tolerations,
					AutomountServiceAccountToken:  ptr.To(true),
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](nonRootUserID),
						RunAsGroup:     ptr.To[int64](nonRootUserID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "reconciler",
						Image: o.Image,
						Args:  reconcilerArgs(o.AllNamespaces),
						Env: []corev1.EnvVar{
							fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"),
							// The Go runtime collects harder as the heap nears this,
							// below the container's 256Mi limit, instead of being killed.
							{Name: "GOMEMLIMIT", Value: MemoryLimitSoft},
						},
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						LivenessProbe:  probe("/healthz", 10),
						ReadinessProbe: probe("/readyz", 5),
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							ReadOnlyRootFilesystem:   ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							Privileged:               ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
					}},
				},
			},
		},
	}
}
