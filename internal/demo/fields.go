package demo

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// selectableFields are the field-selector keys the API server supports for a
// resource (the subset of the real server's that the demo cluster serves).
func selectableFields(gvr schema.GroupVersionResource) map[string]bool {
	f := map[string]bool{"metadata.name": true, "metadata.namespace": true}
	if gvr.Group != "" {
		return f
	}
	switch gvr.Resource {
	case "pods":
		for _, k := range []string{"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "status.phase", "status.podIP", "status.nominatedNodeName"} {
			f[k] = true
		}
	case "events":
		for _, k := range []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"} {
			f[k] = true
		}
	case "nodes":
		f["spec.unschedulable"] = true
	case "persistentvolumes", "persistentvolumeclaims":
	}
	return f
}

// fieldSet returns the selectable fields of an object.
func fieldSet(obj runtime.Object, m metav1.Object) fields.Set {
	s := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	switch o := obj.(type) {
	case *corev1.Pod:
		s["spec.nodeName"] = o.Spec.NodeName
		s["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		s["spec.schedulerName"] = o.Spec.SchedulerName
		s["spec.serviceAccountName"] = o.Spec.ServiceAccountName
		s["status.phase"] = string(o.Status.Phase)
		s["status.podIP"] = o.Status.PodIP
		s["status.nominatedNodeName"] = o.Status.NominatedNodeName
	case *corev1.Event:
		source := o.Source.Component
		if source == "" {
			source = o.ReportingController
		}
		s["involvedObject.kind"] = o.InvolvedObject.Kind
		s["involvedObject.namespace"] = o.InvolvedObject.Namespace
		s["involvedObject.name"] = o.InvolvedObject.Name
		s["involvedObject.uid"] = string(o.InvolvedObject.UID)
		s["involvedObject.apiVersion"] = o.InvolvedObject.APIVersion
		s["involvedObject.resourceVersion"] = o.InvolvedObject.ResourceVersion
		s["involvedObject.fieldPath"] = o.InvolvedObject.FieldPath
		s["reason"] = o.Reason
		s["reportingComponent"] = o.ReportingController
		s["source"] = source
		s["type"] = o.Type
	case *corev1.Node:
		if o.Spec.Unschedulable {
			s["spec.unschedulable"] = "true"
		} else {
			s["spec.unschedulable"] = "false"
		}
	}
	return s
}
