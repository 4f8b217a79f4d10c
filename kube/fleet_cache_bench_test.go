package kube

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// BenchmarkFleetCacheBytes is the heap the dashboard's informer caches hold
// per member, with the objects of a live cluster (BenchmarkInformerCacheBytes's
// kubelet-reported Pods, bound PVCs and claim Leases, decoded from protobuf
// at each List): one pool of 1,000 members in one namespace read by a
// Watcher, against the fleet of 3 clusters x 20 namespaces x 50 pools of 20
// members (60,000 members), each cluster read by a fleet Watcher of every
// namespace. bytes/member is the heap after a forced GC once every cache
// synced, less the heap before the Watchers were built, per member.
func BenchmarkFleetCacheBytes(b *testing.B) {
	for _, s := range []struct {
		name                             string
		clusters, namespaces, pools, per int // clusters 0: one namespace
	}{
		{name: "one-pool", namespaces: 1, pools: 1, per: 1000},
		{name: "fleet", clusters: 3, namespaces: 20, pools: 50, per: 20},
	} {
		// Every cluster of the fleet holds the same namespaces and pools:
		// one encoding serves them all, each decodes its own copy.
		wire := encodeFleet(b, s.namespaces, s.pools, s.per, s.clusters == 0)
		members := max(s.clusters, 1) * s.namespaces * s.pools * s.per
		b.Run("scale="+s.name, func(b *testing.B) {
			var total float64
			for b.Loop() {
				total += fleetCacheBytes(b, wire, s.clusters, members)
			}
			b.ReportMetric(total/float64(b.N)/float64(members), "bytes/member")
		})
	}
}

// encodeFleet encodes one cluster's pools (namespace vdi and pool desk when
// one, else vdi-NN and desk-NN) as protobuf List bodies.
func encodeFleet(tb testing.TB, namespaces, pools, per int, one bool) wirePool {
	tb.Helper()
	spec := engine.Spec{Image: "ghcr.io/example/desktop:2", Size: per}
	spec.Default()
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	cms := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "90000000"}}
	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "90000000"}}
	pvcs := &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{ResourceVersion: "90000000"}}
	leases := &coordinationv1.LeaseList{ListMeta: metav1.ListMeta{ResourceVersion: "90000000"}}
	k := 0 // the member's number in the cluster: distinct UIDs and addresses
	for n := range namespaces {
		nsName, pool := fmt.Sprintf("vdi-%02d", n), ""
		if one {
			nsName = ns
		}
		for p := range pools {
			pool = fmt.Sprintf("desk-%02d", p)
			if one {
				pool = "desk"
			}
			cms.Items = append(cms.Items, *engine.BuildConfigMap(nsName, pool, spec))
			for i := 1; i <= per; i++ {
				k++
				// The objects of member k of pool desk in namespace vdi,
				// moved to member i of this pool in this namespace.
				want := engine.BuildPod(nsName, pool, i, spec)
				pod := kubeletPod(k, spec, now)
				pod.Namespace, pod.Name, pod.Labels = nsName, want.Name, want.Labels
				pods.Items = append(pods.Items, *pod)
				wantPVC := engine.BuildPVC(nsName, pool, i, spec)
				pvc := boundPVC(k, spec, now)
				pvc.Namespace, pvc.Name, pvc.Labels = nsName, wantPVC.Name, wantPVC.Labels
				pvcs.Items = append(pvcs.Items, *pvc)
				if i%4 == 0 {
					wantLease := engine.ClaimLease(nsName, pool, engine.MemberName(pool, i), fmt.Sprintf("user%d@example.com", k), now)
					l := claimLease(k, now)
					l.Namespace, l.Name, l.Labels = nsName, wantLease.Name, wantLease.Labels
					l.Spec.HolderIdentity = wantLease.Spec.HolderIdentity
					leases.Items = append(leases.Items, *l)
				}
			}
		}
	}
	w := wirePool{members: namespaces * pools * per}
	var err error
	for _, e := range []struct {
		out *[]byte
		m   interface{ Marshal() ([]byte, error) }
	}{{&w.cms, cms}, {&w.pods, pods}, {&w.pvcs, pvcs}, {&w.lease, leases}} {
		if *e.out, err = e.m.Marshal(); err != nil {
			tb.Fatal(err)
		}
	}
	return w
}

// fleetCacheBytes starts the dashboard's Watchers (one per cluster; a
// fleet Watcher of every namespace unless clusters is 0) on clients that
// decode the wire lists, and returns the heap their caches hold once synced.
func fleetCacheBytes(b *testing.B, w wirePool, clusters, members int) float64 {
	b.Helper()
	newClient := func() *fake.Clientset {
		client := fake.NewClientset()
		list := func(resource string, body []byte, into runtime.Object) {
			client.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
				obj := into.DeepCopyObject()
				if err := obj.(interface{ Unmarshal([]byte) error }).Unmarshal(body); err != nil {
					return true, nil, err
				}
				return true, obj, nil
			})
		}
		list("configmaps", w.cms, &corev1.ConfigMapList{})
		list("pods", w.pods, &corev1.PodList{})
		list("persistentvolumeclaims", w.pvcs, &corev1.PersistentVolumeClaimList{})
		list("leases", w.lease, &coordinationv1.LeaseList{})
		client.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) {
			return true, watch.NewFake(), nil
		})
		return client
	}
	before := heapInUse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var watchers []*Watcher
	for range max(clusters, 1) {
		var wt *Watcher
		if clusters == 0 {
			wt = NewWatcher(newClient(), ns, withProbeInterval(0))
		} else {
			wt = NewFleetWatcher(newClient(), nil, withProbeInterval(0))
		}
		if err := wt.Start(ctx); err != nil {
			b.Fatal(err)
		}
		watchers = append(watchers, wt)
	}
	got := 0
	for _, wt := range watchers {
		if !wt.WaitForSync(ctx) {
			b.Fatal("caches did not sync")
		}
		for _, s := range wt.sets() {
			got += len(s.Pods.GetStore().List())
		}
	}
	if got != members {
		b.Fatalf("%d Pods in the caches, want %d", got, members)
	}
	after := heapInUse()
	goruntime.KeepAlive(watchers)
	return float64(after - before)
}
