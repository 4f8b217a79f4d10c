package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// ---------------------------------------------------------------------------
// The pool.

func poolSpec(c config) engine.Spec {
	s := engine.Spec{Image: "ghcr.io/example/desktop:2", CPU: "1m", Memory: "1Mi", Disk: "1Gi", Size: c.members}
	s.Default()
	return s
}

// claimed reports whether member i is claimed at rest: every second one.
func claimed(i int) bool { return i%2 == 0 }

func claims(c config) int { return c.members / 2 }

const nodePrefix = "ctpool-peers-"

// parallel runs fn(1..n) on workers goroutines; it returns the first error.
func parallel(workers, n int, fn func(i int) error) error {
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ensurePool makes the pool of c.members members with its claims, removes
// what a larger pool or an interrupted run left, and waits until every Pod
// is Running and Ready and every PVC Bound.
func ensurePool(ctx context.Context, client kubernetes.Interface, c config) {
	start := time.Now()
	ensureNodes(ctx, client, c)
	ns, pool, spec := c.namespace, c.pool, poolSpec(c)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		fatalf("create namespace: %v", err)
	}
	cm := engine.BuildConfigMap(ns, pool, spec)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, err := client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			fatalf("read the pool: %v", err)
		}
		old.Data[engine.KeySpec] = cm.Data[engine.KeySpec]
		if _, err := client.CoreV1().ConfigMaps(ns).Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			fatalf("update the pool: %v", err)
		}
	} else if err != nil {
		fatalf("create the pool: %v", err)
	}

	// What is there already, and what must go: members above the size, and
	// claims of members not claimed at rest (an interrupted measurement).
	sel := metav1.ListOptions{LabelSelector: labels.Set{engine.LabelPool: pool}.String(), ResourceVersion: "0"}
	have := map[string]bool{}
	pods, err := client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		fatalf("list pods: %v", err)
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil {
		fatalf("list PVCs: %v", err)
	}
	leases, err := client.CoordinationV1().Leases(ns).List(ctx, sel)
	if err != nil {
		fatalf("list leases: %v", err)
	}
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	index := func(name string) int { n, _ := engine.MemberIndex(pool, name); return n }
	for _, p := range pods.Items {
		if index(p.Name) > c.members {
			_ = client.CoreV1().Pods(ns).Delete(ctx, p.Name, del)
		} else {
			have["pod/"+p.Name] = true
		}
	}
	for _, p := range pvcs.Items {
		if index(p.Name) > c.members {
			_ = client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, p.Name, del)
		} else {
			have["pvc/"+p.Name] = true
		}
	}
	for _, l := range leases.Items {
		member := l.Labels[engine.LabelMember]
		if n := index(member); n > c.members || !claimed(n) {
			_ = client.CoordinationV1().Leases(ns).Delete(ctx, l.Name, del)
		} else {
			have["lease/"+member] = true
		}
	}

	now := time.Now()
	var made atomic.Int64
	stop := progress("objects created", &made)
	err = parallel(32, c.members, func(i int) error {
		name := engine.MemberName(pool, i)
		pvc := engine.BuildPVC(ns, pool, i, spec)
		if !have["pvc/"+pvc.Name] {
			if _, err := client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); ignoreExists(err) != nil {
				return fmt.Errorf("create PVC %s: %w", pvc.Name, err)
			}
			made.Add(1)
		}
		if !have["pod/"+name] {
			if _, err := client.CoreV1().Pods(ns).Create(ctx, engine.BuildPod(ns, pool, i, spec), metav1.CreateOptions{}); ignoreExists(err) != nil {
				return fmt.Errorf("create Pod %s: %w", name, err)
			}
			made.Add(1)
		}
		if claimed(i) && !have["lease/"+name] {
			l := engine.ClaimLease(ns, pool, name, fmt.Sprintf("user%d@example.com", i), now.Add(-time.Duration(i)*time.Second))
			if _, err := client.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); ignoreExists(err) != nil {
				return fmt.Errorf("create Lease of %s: %w", name, err)
			}
			made.Add(1)
		}
		return nil
	})
	stop()
	if err != nil {
		fatalf("%v", err)
	}

	// Every Pod Running and Ready, every PVC Bound, nothing else left.
	deadline := time.Now().Add(c.setupTimeout)
	for {
		ready, bound, total, err := poolState(ctx, client, c, true)
		if err != nil {
			logf("reading the pool: %v (asking again)", err)
		} else {
			if ready == c.members && bound == c.members && total == c.members {
				break
			}
			logf("pool %s/%s: %d of %d Pods Running and Ready, %d PVCs Bound (%d Pods in all)", ns, pool, ready, c.members, bound, total)
		}
		if time.Now().After(deadline) {
			fatalf("the pool was not Ready within %v (PEERS_SETUP_TIMEOUT)", c.setupTimeout)
		}
		time.Sleep(5 * time.Second) // the poll interval of a wait on a deadline
	}
	logf("pool %s/%s: %d members Ready, %d claimed, in %v", ns, pool, c.members, claims(c), time.Since(start).Round(time.Second))
}

// progress logs a counter every 5 seconds until stopped.
func progress(what string, n *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				logf("%d %s", n.Load(), what)
			}
		}
	}()
	return func() { close(done) }
}

// poolState counts the pool's Pods Running and Ready and its PVCs Bound;
// with work, it first starts the Pods and binds the volumes that wait.
func poolState(ctx context.Context, client kubernetes.Interface, c config, work bool) (ready, bound, total int, err error) {
	sel := metav1.ListOptions{LabelSelector: labels.Set{engine.LabelPool: c.pool}.String()}
	pods, err := client.CoreV1().Pods(c.namespace).List(ctx, sel)
	if err != nil {
		return 0, 0, 0, err
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(c.namespace).List(ctx, sel)
	if err != nil {
		return 0, 0, 0, err
	}
	if work {
		if err := bindVolumes(ctx, client, pvcs.Items); err != nil {
			return 0, 0, 0, err
		}
		if err := startPods(ctx, client, c, pods.Items); err != nil {
			return 0, 0, 0, err
		}
		return poolState(ctx, client, c, false)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		total++
		if podReady(&p) {
			ready++
		}
	}
	for _, p := range pvcs.Items {
		if p.Status.Phase == corev1.ClaimBound && p.DeletionTimestamp == nil {
			bound++
		}
	}
	return ready, bound, total, nil
}

// cleanup deletes the pool's objects at once (no kubelet confirms the
// Pods' deletion on our nodes; the PVCs' protection finalizer is taken
// off), its volumes, the namespace and the nodes added.
func cleanup(ctx context.Context, client kubernetes.Interface, c config) {
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	ns := c.namespace
	for _, err := range []error{
		ignoreNotFound(client.CoreV1().Pods(ns).DeleteCollection(ctx, del, metav1.ListOptions{})),
		ignoreNotFound(client.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(ctx, del, metav1.ListOptions{})),
		ignoreNotFound(client.CoordinationV1().Leases(ns).DeleteCollection(ctx, del, metav1.ListOptions{})),
	} {
		if err != nil {
			fatalf("delete the pool's objects: %v", err)
		}
	}
	pvcs, err := client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list PVCs: %v", err)
	}
	unprotect := []byte(`{"metadata":{"finalizers":null}}`)
	_ = parallel(32, len(pvcs.Items), func(i int) error {
		_, _ = client.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, pvcs.Items[i-1].Name, types.MergePatchType, unprotect, metav1.PatchOptions{})
		return nil
	})
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list PVs: %v", err)
	}
	var ours []string
	for _, pv := range pvs.Items {
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
			ours = append(ours, pv.Name)
		}
	}
	_ = parallel(32, len(ours), func(i int) error {
		_ = client.CoreV1().PersistentVolumes().Delete(ctx, ours[i-1], del)
		_, _ = client.CoreV1().PersistentVolumes().Patch(ctx, ours[i-1], types.MergePatchType, unprotect, metav1.PatchOptions{})
		return nil
	})
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
		fatalf("delete namespace %s: %v", ns, err)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fatalf("list nodes: %v", err)
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, nodePrefix) {
			if err := client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
				fatalf("delete node %s: %v", n.Name, err)
			}
		}
	}
	logf("the pool's objects, %d volumes, namespace %s and the nodes %s* deleted", len(ours), ns, nodePrefix)
}
