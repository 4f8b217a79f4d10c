package main

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/tui"
)

func TestDashboardOptionsWireNodesAndAccess(t *testing.T) {
	client := fake.NewClientset()
	// The API server allows everything but force-release.
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = r.Spec.ResourceAttributes.Verb != "force-release"
		return true, r, nil
	})
	conn := &connection{client: client, namespace: "vdi"}
	o := dashboardOptions(conn, nil, false)
	r := newClusterReach(conn, false, nil, nil)
	if o.Nodes == nil || r.Access("", "vdi") == nil || r.Events("") == nil {
		t.Fatalf("read-write options: nodes %v, access %v, events %v", o.Nodes != nil, r.Access("", "vdi") != nil, r.Events("") != nil)
	}
	ro := dashboardOptions(conn, nil, true)
	if rr := newClusterReach(conn, true, nil, nil); rr.Access("", "vdi") != nil || !ro.ReadOnly || ro.Nodes == nil {
		t.Fatalf("read-only options: access %v, readOnly %v, nodes %v", rr.Access("", "vdi") != nil, ro.ReadOnly, ro.Nodes != nil)
	}
	caps, err := r.Access("", "vdi").Capabilities(context.Background(), tui.ActionNames)
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) != len(tui.ActionNames) {
		t.Fatalf("%d capabilities for %d actions", len(caps), len(tui.ActionNames))
	}
	force := false
	for _, c := range caps {
		want := c.Action != "force-release"
		force = force || !want
		if c.Allowed != want || (!want && c.MissingText() != "force-release leases.coordination.k8s.io") {
			t.Errorf("%s: allowed %v, missing %q", c.Action, c.Allowed, c.MissingText())
		}
	}
	if !force {
		t.Errorf("force-release (keys x and f) was not asked: %+v", caps)
	}
}
