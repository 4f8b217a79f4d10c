package demo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// Event retention: a real API server drops Events after an hour; the demo
// also keeps at most maxEvents, so that a long demo stays small.
const (
	eventTTL   = time.Hour
	maxEvents  = 600
	keepEvents = 450
	gcEvery    = 20 * time.Second
)

// Event sources.
const (
	sourceScheduler   = "default-scheduler"
	sourcePVBinder    = "persistentvolume-controller"
	sourceProvisioner = provisionerName
)

// objRef names the object an Event is about.
type objRef struct {
	namespace              string // "": the main namespace
	kind, apiVersion, name string
	uid                    types.UID
	rv                     string
	fieldPath              string
}

func podRef(p *corev1.Pod) objRef {
	return objRef{namespace: p.Namespace, kind: "Pod", apiVersion: "v1", name: p.Name, uid: p.UID, rv: p.ResourceVersion}
}

func containerRef(p *corev1.Pod, container string) objRef {
	r := podRef(p)
	r.fieldPath = "spec.containers{" + container + "}"
	return r
}

func pvcRef(c *corev1.PersistentVolumeClaim) objRef {
	return objRef{namespace: c.Namespace, kind: "PersistentVolumeClaim", apiVersion: "v1", name: c.Name, uid: c.UID, rv: c.ResourceVersion}
}

// record writes an Event the way client-go's recorder does: a repeat of the
// same event (object, reason, message, source) raises the count and the last
// timestamp of the existing one.
func (s *Sim) record(ctx context.Context, ref objRef, typ, reason, message, component, host string) {
	ns := ref.namespace
	if ns == "" {
		ns = s.opts.Namespace
	}
	key := strings.Join([]string{ns, ref.kind, ref.name, string(ref.uid), ref.fieldPath, typ, reason, message, component, host}, "\x00")
	events := s.client.CoreV1().Events(ns)
	now := metav1.NewTime(s.now)
	if name, ok := s.events[key]; ok {
		ev, err := events.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			ev.Count++
			ev.LastTimestamp = now
			_, err = events.Update(ctx, ev, metav1.UpdateOptions{})
			s.note("update event", err)
			return
		}
		if !apierrors.IsNotFound(err) {
			s.note("get event", err)
			return
		}
		s.forgetEvent(name)
	}
	name := fmt.Sprintf("%s.%x", ref.name, s.now.UnixNano()+s.eventSeq)
	s.eventSeq++
	instance := component
	if host != "" {
		instance = host
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			Kind: ref.kind, APIVersion: ref.apiVersion, Namespace: ns,
			Name: ref.name, UID: ref.uid, ResourceVersion: ref.rv, FieldPath: ref.fieldPath,
		},
		Reason:              reason,
		Message:             message,
		Source:              corev1.EventSource{Component: component, Host: host},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                typ,
		ReportingController: component,
		ReportingInstance:   instance,
	}
	if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.note("create event", err)
		return
	}
	s.events[key] = name
	s.eventKey[name] = key
}

func (s *Sim) forgetEvent(name string) {
	if key, ok := s.eventKey[name]; ok {
		delete(s.events, key)
		delete(s.eventKey, name)
	}
}

// collectEvents drops Events older than an hour and the oldest ones above maxEvents.
func (s *Sim) collectEvents(ctx context.Context) {
	if !s.due(s.gcAt) {
		return
	}
	s.gcAt = s.now.Add(gcEvery)
	for _, ns := range s.Namespaces() {
		s.collectEventsIn(ctx, ns)
	}
}

// collectEventsIn collects the Events of one namespace.
func (s *Sim) collectEventsIn(ctx context.Context, ns string) {
	events := s.client.CoreV1().Events(ns)
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil {
		s.note("list events", err)
		return
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].LastTimestamp.Time, items[j].LastTimestamp.Time
		if !a.Equal(b) {
			return a.Before(b)
		}
		return items[i].Name < items[j].Name
	})
	drop := 0
	if len(items) > maxEvents {
		drop = len(items) - keepEvents
	}
	for i := range items {
		ev := &items[i]
		if i >= drop && s.now.Sub(ev.LastTimestamp.Time) < eventTTL {
			continue
		}
		err := events.Delete(ctx, ev.Name, metav1.DeleteOptions{})
		s.note("delete event", err)
		s.forgetEvent(ev.Name)
	}
}

// memberOf returns the pool and member a Pod or PVC belongs to.
func memberOf(labels map[string]string) (pool, member string) {
	return labels[engine.LabelPool], labels[engine.LabelMember]
}
