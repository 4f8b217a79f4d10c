// Command strip reads a list of Kubernetes objects (kubectl get -o yaml) and
// writes it back without what only the API server owns, so that the objects
// can be created again in another namespace of another cluster: uid,
// resourceVersion, generation, managedFields, the namespace, the
// ServiceAccount token volume the admission adds to Pods, and kubectl's
// last-applied annotation; and the cluster's kube-root-ca.crt ConfigMap.
// Items are sorted by kind and name.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "strip:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	b, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	var list unstructured.UnstructuredList
	if err := yaml.Unmarshal(b, &list.Object); err != nil {
		return err
	}
	items, _, err := unstructured.NestedSlice(list.Object, "items")
	if err != nil {
		return err
	}
	objs := make([]map[string]any, 0, len(items))
	for _, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			return fmt.Errorf("an item is not an object")
		}
		u := unstructured.Unstructured{Object: o}
		if u.GetKind() == "ConfigMap" && u.GetName() == "kube-root-ca.crt" {
			continue // the cluster's, in every namespace
		}
		strip(o)
		objs = append(objs, o)
	}
	slices.SortFunc(objs, func(a, b map[string]any) int {
		ua, ub := unstructured.Unstructured{Object: a}, unstructured.Unstructured{Object: b}
		return cmp.Or(cmp.Compare(ua.GetKind(), ub.GetKind()), cmp.Compare(ua.GetName(), ub.GetName()))
	})
	y, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": objs})
	if err != nil {
		return err
	}
	_, err = out.Write(y)
	return err
}

func strip(o map[string]any) {
	for _, f := range []string{"uid", "resourceVersion", "generation", "managedFields", "namespace", "selfLink"} {
		unstructured.RemoveNestedField(o, "metadata", f)
	}
	unstructured.RemoveNestedField(o, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	if a, _, _ := unstructured.NestedMap(o, "metadata", "annotations"); len(a) == 0 {
		unstructured.RemoveNestedField(o, "metadata", "annotations")
	}
	if k, _, _ := unstructured.NestedString(o, "kind"); k != "Pod" {
		return
	}
	token := func(name string) bool { return strings.HasPrefix(name, "kube-api-access-") }
	if vols, ok, _ := unstructured.NestedSlice(o, "spec", "volumes"); ok {
		vols = slices.DeleteFunc(vols, func(v any) bool { m, _ := v.(map[string]any); n, _ := m["name"].(string); return token(n) })
		_ = unstructured.SetNestedSlice(o, vols, "spec", "volumes")
	}
	for _, kind := range []string{"containers", "initContainers"} {
		cs, ok, _ := unstructured.NestedSlice(o, "spec", kind)
		if !ok {
			continue
		}
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			if mounts, ok, _ := unstructured.NestedSlice(cm, "volumeMounts"); ok {
				mounts = slices.DeleteFunc(mounts, func(v any) bool { m, _ := v.(map[string]any); n, _ := m["name"].(string); return token(n) })
				if len(mounts) == 0 {
					delete(cm, "volumeMounts")
				} else {
					_ = unstructured.SetNestedSlice(cm, mounts, "volumeMounts")
				}
			}
		}
		_ = unstructured.SetNestedSlice(o, cs, "spec", kind)
	}
}
