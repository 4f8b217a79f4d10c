//go:build integration

package systest_test

import (
	"context"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/watchlist"
)

// The run's clock jumps forward to let time pass (a maintenance Lease goes
// stale without ten minutes of waiting). The engines also read the API
// server's clock: the time of a Lease's last write (its managed fields),
// from which a Lease stamped by a slow clock counts (engine.LeaseWritten).
// So that the API server's clock jumps with the run's, every client of the
// run (each actor's and the controller's) sees those times moved onto the
// run's clock: a write at wall time t reads as t plus the run's offset at t
// (chaosClock.offAt). Nothing the API server keeps changes.

// clockJump is one jump of the run's clock: from wall time at on, the
// offset is off.
type clockJump struct {
	at  time.Time
	off time.Duration
}

type jumpLog struct {
	mu    sync.Mutex
	jumps []clockJump
}

func (l *jumpLog) add(at time.Time, off time.Duration) {
	l.mu.Lock()
	l.jumps = append(l.jumps, clockJump{at, off})
	l.mu.Unlock()
}

// offAt is the run's offset at wall time t, as the API server records it
// (to the second): a write in the second of a jump counts as after it, so a
// Lease never looks older than it is.
func (l *jumpLog) offAt(t time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, _ := slices.BinarySearchFunc(l.jumps, t.Add(time.Second), func(j clockJump, t time.Time) int { return j.at.Compare(t) })
	if i == 0 {
		return 0
	}
	return l.jumps[i-1].off
}

// onRunClock is c with its Leases' write times on the run's clock.
func onRunClock(c kubernetes.Interface, clk *chaosClock) kubernetes.Interface {
	return runClockClient{Interface: c, clk: clk}
}

type runClockClient struct {
	kubernetes.Interface
	clk *chaosClock
}

// IsWatchListSemanticsUnSupported passes on what the wrapped client says.
func (c runClockClient) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

func (c runClockClient) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return runClockCoordination{CoordinationV1Interface: c.Interface.CoordinationV1(), clk: c.clk}
}

type runClockCoordination struct {
	coordinationv1client.CoordinationV1Interface
	clk *chaosClock
}

// RESTClient is nil: a list read straight from the REST client (kube's
// streamed list) would pass the Leases by; without one it lists through
// Leases.
func (c runClockCoordination) RESTClient() rest.Interface { return nil }

func (c runClockCoordination) Leases(namespace string) coordinationv1client.LeaseInterface {
	return runClockLeases{LeaseInterface: c.CoordinationV1Interface.Leases(namespace), clk: c.clk}
}

type runClockLeases struct {
	coordinationv1client.LeaseInterface
	clk *chaosClock
}

func (l runClockLeases) shift(o *coordinationv1.Lease) *coordinationv1.Lease {
	if o == nil {
		return nil
	}
	for i := range o.ManagedFields {
		if t := o.ManagedFields[i].Time; t != nil {
			o.ManagedFields[i].Time = &metav1.Time{Time: t.Add(l.clk.jumps.offAt(t.Time))}
		}
	}
	return o
}

// out is a Lease to send: never with managed fields (the API server keeps
// its own), so a moved time never goes back.
func out(o *coordinationv1.Lease) *coordinationv1.Lease {
	if len(o.ManagedFields) == 0 {
		return o
	}
	c := *o
	c.ManagedFields = nil
	return &c
}

func (l runClockLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	o, err := l.LeaseInterface.Get(ctx, name, opts)
	return l.shift(o), err
}

func (l runClockLeases) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	list, err := l.LeaseInterface.List(ctx, opts)
	if list != nil {
		for i := range list.Items {
			l.shift(&list.Items[i])
		}
	}
	return list, err
}

func (l runClockLeases) Create(ctx context.Context, o *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Create(ctx, out(o), opts)
	return l.shift(got), err
}

func (l runClockLeases) Update(ctx context.Context, o *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	got, err := l.LeaseInterface.Update(ctx, out(o), opts)
	return l.shift(got), err
}

func (l runClockLeases) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := l.LeaseInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if o, ok := e.Object.(*coordinationv1.Lease); ok {
			l.shift(o)
		}
		return e, true
	}), nil
}
