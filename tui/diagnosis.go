package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	corev1 "k8s.io/api/core/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/render"
)

// diagnose is the engine's diagnosis of a member of v (which may be nil),
// with the Events read for the detail pane and the nodes when readable, its
// fix naming the keys of hints.
func diagnose(v *engine.PoolView, mm *engine.Member, events []corev1.Event, nodes []*corev1.Node, hints keyHints) engine.Diagnosis {
	return render.Diagnose(v, mm, events, nodes, hints.engine())
}

// nodesMsg answers a nodes request. nodes is nil when they are not readable.
type nodesMsg struct {
	nodes []*corev1.Node
	err   error
}

// nodesTimeout bounds one nodes read.
const nodesTimeout = 10 * time.Second

// nodesCmd lists the nodes once.
func nodesCmd(ctx context.Context, src NodeSource) tea.Cmd {
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, nodesTimeout)
		defer cancel()
		nodes, err := src.Nodes(ctx)
		return nodesMsg{nodes: nodes, err: err}
	}
}
