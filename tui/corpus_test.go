package tui

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctpool-tui/ctpool-tui/internal/corpus"
	"github.com/ctpool-tui/ctpool-tui/kube"
	"github.com/ctpool-tui/ctpool-tui/themes"
)

// The dashboard, on the informers' cache of the objects earlier releases
// wrote (testdata/corpus), shows each pool with no problem reading its
// definition or status, and each claim with its holder.
func TestDashboardShowsTheCorpusOfEarlierReleases(t *testing.T) {
	releases, err := corpus.Load(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releases {
		t.Run(r.Name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := kube.NewWatcher(fake.NewClientset(r.Objects(ns)...), ns)
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			poll(t, "the corpus's pools in the cache", func() bool { return w.Synced() && len(w.Snapshots()) == len(r.Pools()) })
			m := newModel(ctx, Options{
				Context: "prod-eu", Namespace: ns, ReadOnly: true, Theme: themes.Dark(),
				Renderer: themes.NoColorRenderer(io.Discard), Now: time.Now, Data: w, Resolver: &resolver{},
			})
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
			m.Update(loadCmd(w, time.Now)())
			drive(m, "tab")
			pools := m.View()
			for _, p := range r.Pools() {
				if !strings.Contains(pools, p) {
					t.Errorf("the pools table lacks %s:\n%s", p, pools)
				}
			}
			holders := r.Holders()
			for i, p := range r.Pools() {
				if i > 0 {
					drive(m, "esc", "down")
				}
				drive(m, "enter")
				members := m.View()
				for member, h := range holders {
					if strings.HasPrefix(member, p+"-") && !strings.Contains(members, h) {
						t.Errorf("%s's members lack %s's holder %s:\n%s", p, member, h, members)
					}
				}
				for _, bad := range []string{"invalid status", "invalid spec", "cannot be read"} {
					if strings.Contains(members, bad) {
						t.Errorf("%s: %q:\n%s", p, bad, members)
					}
				}
			}
		})
	}
}
