package alerts

import (
	"fmt"

	"github.com/ctpool-tui/ctpool-tui/kube/controller"
)

// The expressions of the rules and of the dashboard spell no metric or label
// name: they take them from package controller, whose registrations use the
// same constants.

// poolLabels are the labels of a pool's series, for by and on.
const poolLabels = controller.MetricLabelNamespace + ", " + controller.MetricLabelPool

// byPool is a gauge of a pool, one series per namespace and pool whichever
// replica or target exported it: a leader handover or a second scrape job
// does not split an alert in two.
func byPool(metric string) string {
	return fmt.Sprintf("max by (%s) (%s)", poolLabels, metric)
}

// onPool joins two pool expressions.
const onPool = " on (" + poolLabels + ") "

// stateIs is the matcher of MetricPoolMembers' series of a state.
func stateIs(state string) string {
	return fmt.Sprintf("%s=%q", controller.MetricLabelState, state)
}

// members is the selector of the members in a state.
func members(state string) string {
	return fmt.Sprintf("%s{%s}", controller.MetricPoolMembers, stateIs(state))
}
