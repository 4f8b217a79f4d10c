package tui

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// The fleet at scale: 3 clusters x 20 namespaces x 50 pools of 20 members
// (60,000 members, 3,000 pools), as the dashboard of several contexts shows
// it (Options.Contexts: each pool's namespace is context/namespace), against
// the one-namespace dashboard of one of its namespaces (50 pools of 20
// members, 1,000 members). Both fill a 120x40 screen with rows, so that a
// ratio is the cost of the rest of the fleet. hack/benchreport holds
// the targets.

// fleetScale is one side of a comparison.
type fleetScale struct {
	name                 string
	clusters, namespaces int // 0 clusters: one namespace, no fleet
}

var fleetScales = []fleetScale{
	{name: "one-namespace", namespaces: 1},
	{name: "fleet", clusters: 3, namespaces: 20},
}

const (
	fleetPools   = 50 // per namespace
	fleetMembers = 20 // per pool
)

// members is how many members the scale holds.
func (s fleetScale) members() int {
	return max(s.clusters, 1) * s.namespaces * fleetPools * fleetMembers
}

// fleetCluster names context i of the fleet.
func fleetCluster(i int) string { return fmt.Sprintf("cluster-%d", i) }

// snapshots builds the scale's pools: every member Ready, every fourth
// claimed, every pool's status recorded.
func (s fleetScale) snapshots() []engine.Snapshot {
	var out []engine.Snapshot
	spec := fixture.Spec("ghcr.io/example/desktop:2", fleetMembers, nil)
	for k := range max(s.clusters, 1) {
		for n := range s.namespaces {
			c := &cluster{NS: fmt.Sprintf("vdi-%02d", n)}
			if s.clusters == 0 {
				c.NS = ns
			}
			for p := range fleetPools {
				pool := fmt.Sprintf("desk-%02d", p)
				c.Pool(pool, spec, &engine.Status{UpdatedAt: fixture.PtrTime(t0.Add(-time.Duration(p) * time.Second))})
				for i := 1; i <= fleetMembers; i++ {
					c.Member(pool, i, spec, fixture.OnNode(fmt.Sprintf("node-%d", i%17)))
					if i%4 == 0 {
						c.Claim(pool, engine.MemberName(pool, i), fmt.Sprintf("user%d@example.com", i), t0.Add(-time.Duration(i)*time.Minute))
					}
				}
			}
			snaps := c.Snapshots()
			if s.clusters > 0 {
				for i := range snaps {
					snaps[i].Context = fleetCluster(k)
				}
			}
			out = append(out, snaps...)
		}
	}
	return out
}

// model is the dashboard of the scale at 120x40 with snaps loaded.
func (s fleetScale) model(snaps []engine.Snapshot) (*Model, *fakeData) {
	var data DataSource
	fd := newFakeData(snaps)
	data = fd
	opts := Options{Context: "prod-eu", Namespace: ns, Renderer: themes.NoColorRenderer(io.Discard),
		Now: func() time.Time { return t0 }, Resolver: &resolver{actions: &fakeActions{}}}
	if s.clusters > 0 {
		var health []engine.ContextHealth
		for k := range s.clusters {
			health = append(health, engine.ContextHealth{Context: fleetCluster(k), Synced: true, LastSync: t0.Add(-time.Second)})
		}
		data = &contextsData{fakeData: fd, contexts: health}
		opts = Options{Context: fmt.Sprintf("%d contexts", s.clusters), Namespace: "each context's", Fleet: true, Contexts: true,
			Renderer: opts.Renderer, Now: opts.Now, Resolver: &resolver{actions: &fakeActions{}}}
	}
	opts.Data = data
	m := newModel(context.Background(), opts)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m.Update(loadCmd(data, func() time.Time { return t0 })())
	m.Update(tickMsg(t0))
	return m, fd
}

// fleetPool is the key of a pool in the middle of the scale.
func (s fleetScale) fleetPool() engine.PoolRef {
	if s.clusters == 0 {
		return engine.PoolRef{Namespace: ns, Name: "desk-25"}
	}
	return engine.PoolRef{Context: fleetCluster(s.clusters / 2), Namespace: "vdi-10", Name: "desk-25"}
}

// BenchmarkFleetPoolsView is the frame cost of the pools view, scrolled to
// the middle of the list.
func BenchmarkFleetPoolsView(b *testing.B) {
	for _, s := range fleetScales {
		snaps := s.snapshots()
		b.Run("scale="+s.name, func(b *testing.B) {
			m, _ := s.model(snaps)
			m.table.selected = s.fleetPool()
			m.table.reselect()
			if got, want := len(m.table.rows), len(snaps); got != want {
				b.Fatalf("%d pool rows, want %d", got, want)
			}
			runtime.GC() // the setup's garbage is not the frames' to collect
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkFleetMembersView is the frame cost of the members view of a
// pool of 20 members.
func BenchmarkFleetMembersView(b *testing.B) {
	for _, s := range fleetScales {
		snaps := s.snapshots()
		b.Run("scale="+s.name, func(b *testing.B) {
			m, _ := s.model(snaps)
			m.openMembers(s.fleetPool())
			if len(m.members.rows) != fleetMembers {
				b.Fatalf("%d member rows, want %d", len(m.members.rows), fleetMembers)
			}
			runtime.GC() // the setup's garbage is not the frames' to collect
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkFleetRebuild is the dashboard's cost of one coalesced change,
// per member: the load (observe every pool, as loadCmd does after the data
// source's Snapshots) and its application to the model (Update with the
// dataMsg), with the members view of a pool open. The data source's own
// read and merge of the informer caches is kube's BenchmarkFleetSnapshots.
func BenchmarkFleetRebuild(b *testing.B) {
	for _, s := range fleetScales {
		snaps := s.snapshots()
		b.Run("scale="+s.name, func(b *testing.B) {
			m, data := s.model(snaps)
			m.openMembers(s.fleetPool())
			now := func() time.Time { return t0 }
			runtime.GC() // the setup's garbage is not the rebuilds' to collect
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				msg := loadCmd(m.opts.Data, now)().(dataMsg)
				m.Update(msg)
			}
			if data.loads.Load() == 0 || len(m.pools) != len(snaps) {
				b.Fatalf("%d pools after the rebuilds, want %d", len(m.pools), len(snaps))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(s.members()), "ns/member")
		})
	}
}

// BenchmarkFleetModelBytes is the heap the dashboard's model holds per
// member once the data is loaded and a members view is open: the heap after
// a forced GC with the model alive, less the heap with only the snapshots
// (the informer caches' share is kube's BenchmarkFleetCacheBytes).
func BenchmarkFleetModelBytes(b *testing.B) {
	for _, s := range fleetScales {
		snaps := s.snapshots()
		b.Run("scale="+s.name, func(b *testing.B) {
			var total float64
			for b.Loop() {
				before := heapAlloc()
				m, _ := s.model(snaps)
				m.openMembers(s.fleetPool())
				_ = m.View()
				after := heapAlloc()
				runtime.KeepAlive(m)
				total += float64(after) - float64(before)
			}
			b.ReportMetric(total/float64(b.N)/float64(s.members()), "bytes/member")
		})
	}
}

// heapAlloc is the live heap after two collections.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
