package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// gatedClient holds each SelfSubjectAccessReview until want of them are in
// flight at once (or the deadline passes), then lets them through to the fake
// clientset. The fake serialises its reactors under one lock, so the gate
// sits in front of it.
type gatedClient struct {
	kubernetes.Interface
	gate *reviewGate
}

type reviewGate struct {
	want     int
	deadline <-chan struct{}
	mu       sync.Mutex
	inFlight int
	maxSeen  int
	opened   chan struct{}
	once     sync.Once
}

func (c gatedClient) AuthorizationV1() authorizationclient.AuthorizationV1Interface {
	return gatedAuthorization{c.Interface.AuthorizationV1(), c.gate}
}

type gatedAuthorization struct {
	authorizationclient.AuthorizationV1Interface
	gate *reviewGate
}

func (a gatedAuthorization) SelfSubjectAccessReviews() authorizationclient.SelfSubjectAccessReviewInterface {
	return gatedReviews{a.AuthorizationV1Interface.SelfSubjectAccessReviews(), a.gate}
}

type gatedReviews struct {
	authorizationclient.SelfSubjectAccessReviewInterface
	gate *reviewGate
}

func (r gatedReviews) Create(ctx context.Context, ssar *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error) {
	g := r.gate
	g.mu.Lock()
	g.inFlight++
	g.maxSeen = max(g.maxSeen, g.inFlight)
	if g.inFlight >= g.want {
		g.once.Do(func() { close(g.opened) })
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.opened:
	case <-g.deadline:
		return nil, errors.New("the reviews were not in flight together before the deadline")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.SelfSubjectAccessReviewInterface.Create(ctx, ssar, opts)
}

// reviewAnswers answers a review: allowed unless its verb is denied.
func reviewAnswers(cs *fake.Clientset, denied ...string) {
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		out := r.DeepCopy()
		out.Status.Allowed = true
		for _, d := range denied {
			if r.Spec.ResourceAttributes.Verb == d {
				out.Status.Allowed = false
			}
		}
		return true, out, nil
	})
}

func TestCapabilitiesAskInParallel(t *testing.T) {
	actions := []engine.Action{engine.ActionReconcile, engine.ActionRelease, engine.ActionForceRelease, engine.ActionDelete, engine.ActionLogs}
	distinct := map[engine.Permission]bool{}
	for _, a := range actions {
		ps, err := RequiredPermissions(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if !ProtectionPermission(p) { // never asked: optional
				distinct[p] = true
			}
		}
	}
	if len(distinct) < ReviewConcurrency {
		t.Fatalf("only %d distinct permissions: too few to fill %d reviews in flight", len(distinct), ReviewConcurrency)
	}
	tests := []struct {
		name   string
		denied []string
		want   map[engine.Action]string // "" allowed, else the missing permission
	}{
		{name: "all allowed", want: map[engine.Action]string{
			engine.ActionReconcile: "", engine.ActionRelease: "", engine.ActionForceRelease: "", engine.ActionDelete: "", engine.ActionLogs: "",
		}},
		{name: "no force-release, no deletes", denied: []string{"force-release", "delete"}, want: map[engine.Action]string{
			// The first missing one, in the order of group, resource and verb.
			engine.ActionReconcile:    "delete persistentvolumeclaims",
			engine.ActionRelease:      "delete persistentvolumeclaims",
			engine.ActionForceRelease: "delete persistentvolumeclaims",
			engine.ActionDelete:       "delete configmaps",
			engine.ActionLogs:         "",
		}},
		{name: "no force-release", denied: []string{"force-release"}, want: map[engine.Action]string{
			engine.ActionReconcile: "", engine.ActionRelease: "", engine.ActionDelete: "", engine.ActionLogs: "",
			engine.ActionForceRelease: "force-release leases.coordination.k8s.io",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			reviewAnswers(cs, tt.denied...)
			deadline, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			gate := &reviewGate{want: ReviewConcurrency, deadline: deadline.Done(), opened: make(chan struct{})}
			a := &Access{Client: gatedClient{cs, gate}, Namespace: "vdi"}
			caps, err := a.Capabilities(context.Background(), actions)
			if err != nil {
				t.Fatalf("Capabilities: %v (at most %d reviews were in flight together)", err, gate.maxSeen)
			}
			if gate.maxSeen != ReviewConcurrency {
				t.Errorf("%d reviews in flight at most, want the bound %d", gate.maxSeen, ReviewConcurrency)
			}
			reviews := 0
			for _, act := range cs.Actions() {
				if act.GetResource().Resource == "selfsubjectaccessreviews" {
					reviews++
				}
			}
			if reviews != len(distinct) {
				t.Errorf("%d reviews, want one per distinct permission (%d)", reviews, len(distinct))
			}
			if len(caps) != len(actions) {
				t.Fatalf("caps %v", caps)
			}
			for i, c := range caps {
				if c.Action != actions[i] {
					t.Errorf("caps[%d] is %s, want %s", i, c.Action, actions[i])
				}
				got := ""
				if c.Missing != nil {
					got = c.Missing.String()
				}
				if c.Allowed != (got == "") || got != tt.want[c.Action] {
					t.Errorf("%s: allowed %v, missing %q; want missing %q", c.Action, c.Allowed, got, tt.want[c.Action])
				}
			}
		})
	}
}

func TestCapabilitiesFirstErrorEndsTheOthers(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("connection refused")
	})
	a := &Access{Client: cs, Namespace: "vdi"}
	caps, err := a.Capabilities(context.Background(), []engine.Action{engine.ActionReconcile, engine.ActionDelete})
	if err == nil || caps != nil {
		t.Fatalf("Capabilities = %v, %v; want the error", caps, err)
	}
	if _, err := a.Capabilities(context.Background(), []engine.Action{"assign"}); err == nil {
		t.Fatal("an unknown action was accepted")
	}
}

// The claim protection's permissions are never asked: an identity without
// them (a role written before them) keeps every action.
func TestCapabilitiesLeaveOutTheProtection(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = !(ra.Resource == "poddisruptionbudgets" || ra.Resource == "pods" && ra.Verb == "patch")
		return true, r, nil
	})
	a := &Access{Client: cs, Namespace: "vdi"}
	caps, err := a.Capabilities(context.Background(), []engine.Action{engine.ActionReconcile, engine.ActionClaim, engine.ActionApply})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps {
		if !c.Allowed {
			t.Errorf("%s refused for want of %v", c.Action, c.Missing)
		}
	}
	for _, act := range cs.Actions() {
		if r, ok := act.(k8stesting.CreateAction); ok {
			if sar, ok := r.GetObject().(*authorizationv1.SelfSubjectAccessReview); ok && ProtectionPermission(engine.Permission{Group: sar.Spec.ResourceAttributes.Group, Resource: sar.Spec.ResourceAttributes.Resource, Verb: sar.Spec.ResourceAttributes.Verb}) {
				t.Errorf("asked %+v", sar.Spec.ResourceAttributes)
			}
		}
	}
}
