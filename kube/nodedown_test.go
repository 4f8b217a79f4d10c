package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// testNode is a node named name: Ready, or as a stopped kubelet leaves it.
func testNode(name string, down bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if down {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(t0)}}
		n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}}
	}
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/big:1"}, SizeBytes: 1 << 30}}
	return n
}

const downEvidence = "Ready=Unknown since 2026-03-02T09:00:00Z: Kubelet stopped posting node status.; node.kubernetes.io/unreachable:NoSchedule"

func forbidNodes(client *fake.Clientset, verbs ...string) {
	for _, verb := range verbs {
		client.PrependReactor(verb, "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
		})
	}
	client.PrependWatchReactor("nodes", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
	})
}

// TestOneShotReadersNodeDown: status, --once and every engine operation read
// the down nodes with the pool (ListPools, ListFleet, Cluster.Snapshot); an
// identity that may not list nodes, or a failed list, gives NodeDown nil and
// the pool as always.
func TestOneShotReadersNodeDown(t *testing.T) {
	readers := []struct {
		name string
		read func(ctx context.Context, c *fake.Clientset) ([]engine.Snapshot, error)
	}{
		{"ListPools", func(ctx context.Context, c *fake.Clientset) ([]engine.Snapshot, error) { return ListPools(ctx, c, ns) }},
		{"ListFleet all", func(ctx context.Context, c *fake.Clientset) ([]engine.Snapshot, error) { return ListFleet(ctx, c, nil) }},
		{"ListFleet named", func(ctx context.Context, c *fake.Clientset) ([]engine.Snapshot, error) {
			return ListFleet(ctx, c, []string{ns})
		}},
		{"Cluster.Snapshot", func(ctx context.Context, c *fake.Clientset) ([]engine.Snapshot, error) {
			s, err := NewCluster(c, ns).Snapshot(ctx, "desk")
			return []engine.Snapshot{s}, err
		}},
	}
	cases := []struct {
		name   string
		nodes  bool // seed the nodes
		refuse func(*fake.Clientset)
		want   map[string]string
	}{
		{"a node down", true, nil, map[string]string{"node-b": downEvidence}},
		{"no nodes", false, nil, map[string]string{}},
		{"nodes forbidden", true, func(c *fake.Clientset) { forbidNodes(c, "list") }, nil},
		{"node list fails", true, func(c *fake.Clientset) {
			c.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
			})
		}, nil},
	}
	for _, r := range readers {
		for _, c := range cases {
			t.Run(r.name+"/"+c.name, func(t *testing.T) {
				objs := poolObjects("desk", 2)
				if c.nodes {
					objs = append(objs, testNode("node-a", false), testNode("node-b", true))
				}
				client := fake.NewClientset(objs...)
				if c.refuse != nil {
					c.refuse(client)
				}
				snaps, err := r.read(t.Context(), client)
				if err != nil || len(snaps) != 1 || len(snaps[0].Pods) != 2 {
					t.Fatalf("read = %d snapshots, %v; want the pool with its 2 Pods", len(snaps), err)
				}
				got := snaps[0].NodeDown
				if (got == nil) != (c.want == nil) || len(got) != len(c.want) || got["node-b"] != c.want["node-b"] {
					t.Errorf("NodeDown = %#v, want %#v", got, c.want)
				}
			})
		}
	}
}

// TestWatcherNodeDown: the Watcher's node informer fills every snapshot's
// NodeDown and keeps only what NodeDown reads, and a node that goes down,
// comes back or goes away signals a whole read.
func TestWatcherNodeDown(t *testing.T) {
	w, client := startWatcher(t, append(poolObjects("desk", 1), testNode("node-a", false), testNode("node-b", true))...)
	poll(t, "the nodes to be known", func() bool { return w.NodeDown() != nil })
	for _, s := range append(w.Snapshots(), mustWatcherSnapshot(t, w)) {
		if s.NodeDown["node-b"] != downEvidence || len(s.NodeDown) != 1 {
			t.Fatalf("snapshot NodeDown = %#v, want node-b's evidence", s.NodeDown)
		}
	}
	if n, ok, _ := w.nodes.informer.GetStore().GetByKey("node-b"); !ok || len(n.(*corev1.Node).Status.Images) != 0 {
		t.Errorf("the cached node keeps its images: %v", n)
	}
	news := w.nodes.news.Load()

	// node-b comes back: news, a signal, a whole read, no node down.
	if _, err := client.CoreV1().Nodes().Update(t.Context(), testNode("node-b", false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "news of node-b", func() bool { return w.nodes.news.Load() > news })
	if down := w.NodeDown(); down == nil || len(down) != 0 {
		t.Errorf("after node-b came back: NodeDown = %#v, want empty", down)
	}
	select {
	case <-w.Changed():
	default:
		t.Error("no signal when node-b came back")
	}
	if all, _ := w.TakeChanges(); !all {
		t.Error("a node that came back did not ask for a whole read")
	}
	if down := w.Snapshots()[0].NodeDown; down == nil || len(down) != 0 {
		t.Errorf("after node-b came back: NodeDown = %#v, want empty", down)
	}
	// node-a goes down and is deleted: each is news.
	if _, err := client.CoreV1().Nodes().Update(t.Context(), testNode("node-a", true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "node-a to be down", func() bool { return w.NodeDown()["node-a"] != "" })
	if err := client.CoreV1().Nodes().Delete(t.Context(), "node-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "node-a to be gone", func() bool { return len(w.NodeDown()) == 0 })
}

// TestWatcherNodesForbidden: an identity that may not list nodes gets a
// Watcher that syncs, reads its pools and reports no watch error, with
// NodeDown nil; the node informer stops.
func TestWatcherNodesForbidden(t *testing.T) {
	client := fake.NewClientset(append(poolObjects("desk", 1), testNode("node-b", true))...)
	forbidNodes(client, "list", "watch")
	w := startWatcherOn(t, client) // the pool caches sync while nodes are forbidden
	poll(t, "the node informer to give up", w.nodes.forbidden.Load)
	snaps := w.Snapshots()
	if len(snaps) != 1 || len(snaps[0].Pods) != 1 || snaps[0].NodeDown != nil {
		t.Fatalf("snapshots = %+v; want the pool with NodeDown nil", snaps)
	}
	if s := mustWatcherSnapshot(t, w); s.NodeDown != nil {
		t.Errorf("Snapshot NodeDown = %#v, want nil", s.NodeDown)
	}
	if at, err := w.LastWatchError(); !at.IsZero() || err != nil {
		t.Errorf("LastWatchError = %v, %v; the optional nodes are no connection error", at, err)
	}
}

func mustWatcherSnapshot(t *testing.T, w *Watcher) engine.Snapshot {
	t.Helper()
	s, err := w.Snapshot(t.Context(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNodeWatchNews: only a node going down, coming back (or going away)
// or changing its evidence is news for the Watcher, and only after the
// first list; a status written without news is not.
func TestNodeWatchNews(t *testing.T) {
	type step struct {
		node, why string
		synced    bool
	}
	cases := []struct {
		name  string
		steps []step
		want  int // changed calls
		down  map[string]string
	}{
		{"the first list is no news, and unknown until it ends", []step{{"a", "Ready=Unknown", false}, {"b", "", false}}, 0, nil},
		{"a healthy node written again", []step{{"b", "", true}, {"b", "", true}}, 0, map[string]string{}},
		{"a down node written again", []step{{"a", "Ready=Unknown", false}, {"a", "Ready=Unknown", true}}, 0, map[string]string{"a": "Ready=Unknown"}},
		{"down, then back", []step{{"a", "Ready=Unknown", true}, {"a", "", true}}, 2, map[string]string{}},
		{"new evidence", []step{{"a", "Ready=Unknown", false}, {"a", "Ready=False", true}}, 1, map[string]string{"a": "Ready=False"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			n := NewNodeWatch(fake.NewClientset(), func() { calls++ })
			synced := false
			n.synced = func() bool { return synced }
			for _, s := range c.steps {
				synced = s.synced
				n.set(s.node, s.why, false)
			}
			if calls != c.want {
				t.Errorf("%d changes told, want %d", calls, c.want)
			}
			if got := n.Down(); (got == nil) != (c.down == nil) || len(got) != len(c.down) || func() bool {
				for k, v := range c.down {
					if got[k] != v {
						return true
					}
				}
				return false
			}() {
				t.Errorf("Down = %#v, want %#v", got, c.down)
			}
		})
	}
}
