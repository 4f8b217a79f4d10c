package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

func newManifestsCmd(e *env) *cobra.Command {
	var image string
	var allNamespaces, nodes bool
	var nodeSelector map[string]string
	var tolerations []string
	c := &cobra.Command{
		Use:   "manifests --image IMAGE [--namespace N] [-A] [--node-selector K=V] [--toleration K[=V][:EFFECT]]",
		Short: "Print the manifests that run the reconciler in the cluster",
		Long: `Print (YAML) what runs the reconciler inside the cluster, in the namespace
of its pools:

  ServiceAccount  ctpool-tui
  Role            ctpool-tui-reconciler: the operator role's rules (derived
                  from the API calls the operations make) plus get/update on
                  the election Lease ` + controller.LeaseName + ` and create on Leases
  RoleBinding     ctpool-tui-reconciler, to the ServiceAccount
  ClusterRole     ctpool-tui-reconciler-nodes-NAMESPACE: list and watch on
                  nodes, and its ClusterRoleBinding to the ServiceAccount, so
                  that the reconciler waits for a down node instead of
                  replacing its members (--nodes=false leaves them out, for
                  one who may create no ClusterRole)
  Deployment      ctpool-tui-reconciler: 2 replicas running
                  "reconcile --all --watch --leader-elect --metrics-addr :9090",
                  POD_NAME and POD_NAMESPACE from the downward API, /healthz and
                  /readyz probes, resource requests and limits, non-root,
                  read-only root file system, no privilege escalation, all
                  capabilities dropped, seccomp RuntimeDefault

With -A (--all-namespaces) the reconciler keeps the pools of every
namespace: a ClusterRole and ClusterRoleBinding named ctpool-tui-reconciler
replace the Role and RoleBinding, and the ClusterRole grants only what the
reconciler does (watch and reconcile pools, the election Lease, watch the
nodes unless --nodes=false; no claims, console or logs in every namespace). The Deployment runs
"reconcile -A"; the ServiceAccount, Deployment and election Lease stay in
the namespace.

--node-selector and --toleration place the reconciler's Pods, e.g. on the
nodes of a system pool: --node-selector pool=system --toleration
dedicated=system:NoSchedule (a toleration is KEY[=VALUE][:EFFECT], as
kubectl taint writes a taint; without a value it tolerates any value).

--image is required: this project publishes no image, so build it at your
site (make image: a static binary on a distroless-like base, running as a
non-root user, as an OCI archive, built without a container engine; or make
image-docker from the Dockerfile) and push it to a registry the cluster
pulls from. Pipe the output to kubectl apply -f -.`,
		Example: `  ctpool-tui manifests -n vdi --image registry.example/ctpool-tui:1.0 | kubectl apply -f -
  ctpool-tui manifests -n vdi --image registry.example/ctpool-tui:1.0 --node-selector pool=system --toleration dedicated=system:NoSchedule
  ctpool-tui manifests -n vdi-system -A --image registry.example/ctpool-tui:1.0 | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(image) == "" {
				return usageErr("manifests needs --image: the image of ctpool-tui built at your site (make image); this project publishes none")
			}
			ns, err := e.opts.Namespace()
			if err != nil {
				return opErr(err)
			}
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return usageErr("invalid namespace %q: %s", ns, errs[0])
			}
			tols, err := parseTolerations(tolerations)
			if err != nil {
				return err
			}
			for k, v := range nodeSelector {
				if errs := validation.IsQualifiedName(k); len(errs) > 0 {
					return usageErr("--node-selector: invalid label key %q: %s", k, errs[0])
				}
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					return usageErr("--node-selector: invalid value %q of %s: %s", v, k, errs[0])
				}
			}
			objs, err := controller.Manifests(controller.ManifestOptions{Namespace: ns, Image: image, AllNamespaces: allNamespaces, NoNodes: !nodes,
				NodeSelector: nodeSelector, Tolerations: tols})
			if err != nil {
				return opErr(err)
			}
			for _, obj := range objs {
				out, err := manifestYAML(obj)
				if err != nil {
					return opErr(err)
				}
				fmt.Fprintf(e.stdout, "---\n%s", out)
			}
			return nil
		},
	}
	c.Flags().StringVar(&image, "image", "", "the ctpool-tui image built by your site (required; make image builds one)")
	c.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "reconcile the pools of every namespace (ClusterRole and ClusterRoleBinding)")
	c.Flags().BoolVar(&nodes, "nodes", true, "let the reconciler watch the nodes (a ClusterRole), so that it waits for a down node instead of replacing its members; --nodes=false where you may create no ClusterRole")
	c.Flags().StringToStringVar(&nodeSelector, "node-selector", nil, "run the reconciler's Pods on the nodes with these labels (KEY=VALUE,...)")
	c.Flags().StringArrayVar(&tolerations, "toleration", nil, "let the reconciler's Pods run on nodes with this taint: KEY[=VALUE][:EFFECT] (repeatable)")
	return c
}

// parseTolerations reads KEY[=VALUE][:EFFECT] each: Equal with a value,
// Exists without; no effect tolerates every effect.
func parseTolerations(specs []string) ([]corev1.Toleration, error) {
	var out []corev1.Toleration
	for _, s := range specs {
		rest, effect, _ := strings.Cut(s, ":")
		key, value, hasValue := strings.Cut(rest, "=")
		tol := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
		if hasValue {
			tol.Operator, tol.Value = corev1.TolerationOpEqual, value
		}
		switch e := corev1.TaintEffect(effect); e {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			tol.Effect = e
		default:
			return nil, usageErr("--toleration %q: effect %q is none of NoSchedule, PreferNoSchedule, NoExecute", s, effect)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, usageErr("--toleration %q: invalid key %q: %s", s, key, errs[0])
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, usageErr("--toleration %q: invalid value %q: %s", s, value, errs[0])
		}
		out = append(out, tol)
	}
	return out, nil
}

// manifestYAML is an object as YAML without its empty status and creation
// timestamp, which only the API server fills in.
func manifestYAML(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	prune(m)
	return yaml.Marshal(m)
}

// prune drops creationTimestamp: null and empty objects ({}) at any depth.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			if k == "creationTimestamp" {
				delete(m, k)
			}
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}
