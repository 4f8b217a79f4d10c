package tui

import (
	"testing"

	"github.com/ctpool-tui/ctpool-tui/internal/fixture"
)

func TestGoldenScreens(t *testing.T) {
	tests := []struct {
		name          string
		cluster       func() *cluster
		width, height int
		readOnly      bool
		keys          []string
		events        bool
	}{
		{name: "pools_120x40", cluster: fixture.Demo, width: 120, height: 40},
		{name: "pools_80x24", cluster: fixture.Demo, width: 80, height: 24},
		{name: "pools_filtered_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"/", "s", "a", "n", "d"}},
		{name: "pools_filter_none_80x24", cluster: fixture.Demo, width: 80, height: 24, keys: []string{"/", "z", "z", "enter"}},
		{name: "pools_gpu_selected_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "down", "down"}},
		{name: "members_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "enter"}},
		{name: "members_80x24", cluster: fixture.Demo, width: 80, height: 24, keys: []string{"down", "enter"}},
		{name: "members_filtered_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "enter", "/", "u", "n", "s", "enter"}},
		{name: "members_sorted_state_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "enter", "S"}},
		{name: "detail_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "enter", "down", "enter"}, events: true},
		{name: "help_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"?"}},
		{name: "force_release_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "enter", "down", "f"}},
		{name: "resize_input_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "s", "3"}},
		{name: "resize_confirm_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "s", "3", "enter"}},
		{name: "delete_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "D", "d", "e"}},
		{name: "wall_80x24", cluster: fixture.Demo, width: 80, height: 24, readOnly: true},
		{name: "wall_200x60", cluster: fixture.Demo, width: 200, height: 60, readOnly: true},
		{name: "wall_help_80x24", cluster: fixture.Demo, width: 80, height: 24, readOnly: true, keys: []string{"?"}},
		{name: "members_no_definition_120x40", cluster: fixture.Demo, width: 120, height: 40, keys: []string{"down", "down", "enter"}},
		{name: "members_broken_spec_80x24", cluster: fixture.Demo, width: 80, height: 24, keys: []string{"enter"}},
		{name: "hostile_pools_120x40", cluster: fixture.Hostile, width: 120, height: 40},
		{name: "hostile_members_120x40", cluster: fixture.Hostile, width: 120, height: 40, keys: []string{"enter"}},
		{name: "hostile_detail_120x40", cluster: fixture.Hostile, width: 120, height: 40, keys: []string{"enter", "enter"}, events: true},
		{name: "hostile_wall_80x24", cluster: fixture.Hostile, width: 80, height: 24, readOnly: true},
		{name: "node_down_members_120x40", cluster: fixture.NodeDown, width: 120, height: 40, keys: []string{"enter"}},
		{name: "node_down_detail_120x40", cluster: fixture.NodeDown, width: 120, height: 40, keys: []string{"enter", "enter"}, events: true},
		{name: "backoff_members_120x40", cluster: fixture.Backoff, width: 120, height: 40, keys: []string{"enter"}},
		{name: "backoff_detail_120x40", cluster: fixture.Backoff, width: 120, height: 40, keys: []string{"enter", "down", "enter"}, events: true},
		{name: "rollout_pools_120x40", cluster: fixture.Rollout, width: 120, height: 40},
		{name: "rollout_halted_pools_120x40", cluster: fixture.Rollout, width: 120, height: 40, keys: []string{"down"}},
		{name: "rollout_members_120x40", cluster: fixture.Rollout, width: 120, height: 40, keys: []string{"enter"}},
		{name: "rollout_halted_members_120x40", cluster: fixture.Rollout, width: 120, height: 40, keys: []string{"down", "enter"}},
		{name: "rollout_halted_detail_120x40", cluster: fixture.Rollout, width: 120, height: 40, keys: []string{"down", "enter", "down", "down", "enter"}, events: true},
		{name: "rollout_resume_120x40", cluster: fixture.Rollout, width: 120, height: 40, keys: []string{"down", "R"}},
		{name: "drain_pools_120x40", cluster: fixture.Drain, width: 120, height: 40},
		{name: "drain_members_120x40", cluster: fixture.Drain, width: 120, height: 40, keys: []string{"enter"}},
		{name: "drain_detail_120x40", cluster: fixture.Drain, width: 120, height: 40, keys: []string{"enter", "enter"}, events: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOpts{width: tt.width, height: tt.height, readOnly: tt.readOnly}
			if !tt.readOnly {
				o.actions = &fakeActions{}
			}
			if tt.events {
				o.events = &fakeEvents{}
			}
			m, _ := newTestModel(t, tt.cluster(), o)
			for _, k := range tt.keys {
				_, cmd := m.Update(keyMsg(k))
				if msg, ok := runEvents(cmd); ok {
					m.Update(msg)
				}
			}
			got := m.View()
			checkScreen(t, got, tt.width, tt.height)
			golden(t, tt.name, got)
		})
	}
}
