// Package corpus loads the pool objects earlier releases wrote
// (testdata/corpus, captured by hack/corpus/capture), for the tests that
// check this release reads, reconciles, claims and releases them.
package corpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"sigs.k8s.io/yaml"
)

// Release is the corpus of one release: what it wrote, as a list of
// ConfigMaps, Pods, PVCs and Leases.
type Release struct {
	// Name is the corpus's directory name (r2, r3, ...).
	Name string
	// Commit is the release's commit.
	Commit string
	// Objects are the objects it wrote, ConfigMaps first, then PVCs, Pods
	// and Leases; their namespace is empty.
	ConfigMaps []*corev1.ConfigMap
	PVCs       []*corev1.PersistentVolumeClaim
	Pods       []*corev1.Pod
	Leases     []*coordinationv1.Lease
}

// Dir is testdata/corpus of this source tree.
func Dir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "corpus")
}

// Load reads every release of the corpus, oldest first. The claim Leases'
// times are moved by one offset so that the latest renewal is at now: a
// claim held when the release was captured is held when it is loaded.
func Load(now time.Time) ([]Release, error) {
	ents, err := os.ReadDir(Dir())
	if err != nil {
		return nil, err
	}
	var out []Release
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		r, err := load(filepath.Join(Dir(), e.Name()), now)
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", e.Name(), err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no release in %s", Dir())
	}
	return out, nil
}

type list struct {
	Items []map[string]any `json:"items"`
}

func load(dir string, now time.Time) (Release, error) {
	r := Release{Name: filepath.Base(dir)}
	c, err := os.ReadFile(filepath.Join(dir, "commit"))
	if err != nil {
		return r, err
	}
	r.Commit = strings.TrimSpace(string(c))
	b, err := os.ReadFile(filepath.Join(dir, "objects.yaml"))
	if err != nil {
		return r, err
	}
	var l list
	if err := yaml.Unmarshal(b, &l); err != nil {
		return r, err
	}
	for i, it := range l.Items {
		j, err := yaml.Marshal(it)
		if err != nil {
			return r, err
		}
		var into any
		switch it["kind"] {
		case "ConfigMap":
			o := &corev1.ConfigMap{}
			r.ConfigMaps, into = append(r.ConfigMaps, o), o
		case "PersistentVolumeClaim":
			o := &corev1.PersistentVolumeClaim{}
			r.PVCs, into = append(r.PVCs, o), o
		case "Pod":
			o := &corev1.Pod{}
			r.Pods, into = append(r.Pods, o), o
		case "Lease":
			o := &coordinationv1.Lease{}
			r.Leases, into = append(r.Leases, o), o
		default:
			return r, fmt.Errorf("item %d: kind %v is not in a pool", i, it["kind"])
		}
		if err := yaml.UnmarshalStrict(j, into); err != nil {
			return r, fmt.Errorf("item %d: %w", i, err)
		}
	}
	var latest time.Time
	for _, l := range r.Leases {
		if t := l.Spec.RenewTime; t != nil && t.After(latest) {
			latest = t.Time
		}
	}
	shift := now.Sub(latest)
	move := func(t *metav1.MicroTime) {
		if t != nil {
			t.Time = t.Add(shift)
		}
	}
	for _, l := range r.Leases {
		move(l.Spec.AcquireTime)
		move(l.Spec.RenewTime)
	}
	return r, nil
}

// Holders maps each claimed member to its claim's holder.
func (r Release) Holders() map[string]string {
	out := map[string]string{}
	for _, l := range r.Leases {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			out[strings.TrimPrefix(l.Name, "corral-vdi-ct-")] = *l.Spec.HolderIdentity
		}
	}
	return out
}

// Pools are the names of the release's pools.
func (r Release) Pools() []string {
	var out []string
	for _, cm := range r.ConfigMaps {
		if p, ok := strings.CutPrefix(cm.Name, "corral-vdi-ctpool-"); ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Objects are copies of the release's objects in namespace ns, as a fake
// clientset takes them: each with a resourceVersion, as the API server
// gives one.
func (r Release) Objects(ns string) []runtime.Object {
	var out []runtime.Object
	add := func(o interface {
		runtime.Object
		SetNamespace(string)
		SetResourceVersion(string)
	}) {
		o.SetNamespace(ns)
		o.SetResourceVersion(fmt.Sprint(len(out) + 1))
		out = append(out, o)
	}
	for _, o := range r.ConfigMaps {
		add(o.DeepCopy())
	}
	for _, o := range r.PVCs {
		add(o.DeepCopy())
	}
	for _, o := range r.Pods {
		add(o.DeepCopy())
	}
	for _, o := range r.Leases {
		add(o.DeepCopy())
	}
	return out
}

// Create writes the release's objects into namespace ns of a real API
// server. What binds them to the cluster they were captured on is left
// out: a PVC's volume (the plane's provisioner binds a new one) and the
// statuses (a Pod's is the node's to write: the kwok nodes its spec names
// make it Running and Ready again).
func (r Release) Create(ctx context.Context, client kubernetes.Interface, ns string) error {
	for _, o := range r.ConfigMaps {
		c := o.DeepCopy()
		c.Namespace = ns
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, o := range r.PVCs {
		c := o.DeepCopy()
		c.Namespace, c.Spec.VolumeName, c.Status = ns, "", corev1.PersistentVolumeClaimStatus{}
		for k := range c.Annotations {
			if strings.HasPrefix(k, "pv.kubernetes.io/") || strings.HasPrefix(k, "volume.") {
				delete(c.Annotations, k)
			}
		}
		if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, o := range r.Pods {
		c := o.DeepCopy()
		c.Namespace, c.Status = ns, corev1.PodStatus{}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, o := range r.Leases {
		c := o.DeepCopy()
		c.Namespace = ns
		if _, err := client.CoordinationV1().Leases(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// Converge reconciles each of the release's pools until a round of
// reconciles does nothing, at most max rounds, calling between after each
// round that did something (a node making the new Pods Ready). It returns
// the rounds run, the last one doing nothing.
func (r Release) Converge(ctx context.Context, eng *engine.Engine, max int, between func()) (int, error) {
	for round := 1; round <= max; round++ {
		done := 0
		for _, p := range r.Pools() {
			res, err := eng.Reconcile(ctx, p)
			if err != nil {
				return round, fmt.Errorf("reconcile %s (round %d): %w", p, round, err)
			}
			done += res.Done()
		}
		if done == 0 {
			return round, nil
		}
		between()
	}
	return max, fmt.Errorf("%v not converged after %d rounds of reconciles", r.Pools(), max)
}
