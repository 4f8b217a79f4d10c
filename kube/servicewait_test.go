package kube

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// A console Service is waited for with deletes alone (the contract grants
// only services delete): a delete that succeeds means it is still there
// (being deleted), NotFound means gone, a failed UID precondition means
// replaced. No get, list or watch of Services is sent.
func TestWaitServiceGoneByDeletes(t *testing.T) {
	old := serviceRecheck
	serviceRecheck = time.Millisecond
	defer func() { serviceRecheck = old }()
	gr := schema.GroupResource{Resource: "services"}
	for _, tc := range []struct {
		name    string
		uid     string
		answers []error // the answers of the successive deletes; the last repeats
		deletes int
		wantErr error
	}{
		{name: "gone at once", answers: []error{apierrors.NewNotFound(gr, "desk-1-console")}, deletes: 1},
		{name: "held by a finalizer for three deletes", answers: []error{nil, nil, nil, apierrors.NewNotFound(gr, "desk-1-console")}, deletes: 4},
		{name: "replaced by another UID", uid: "uid-1", answers: []error{nil, apierrors.NewConflict(gr, "desk-1-console", errors.New("precondition failed: UID"))}, deletes: 2},
		{name: "forbidden", answers: []error{apierrors.NewForbidden(gr, "desk-1-console", errors.New("no"))}, deletes: 1, wantErr: engine.ErrForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			var mu sync.Mutex
			var verbs []string
			deletes := 0
			cs.PrependReactor("*", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				verbs = append(verbs, a.GetVerb())
				if a.GetVerb() != "delete" {
					return true, nil, errors.New("unexpected " + a.GetVerb())
				}
				d := a.(k8stesting.DeleteActionImpl)
				if tc.uid != "" && (d.DeleteOptions.Preconditions == nil || d.DeleteOptions.Preconditions.UID == nil || string(*d.DeleteOptions.Preconditions.UID) != tc.uid) {
					return true, nil, errors.New("delete without the UID precondition")
				}
				i := min(deletes, len(tc.answers)-1)
				deletes++
				return true, nil, tc.answers[i]
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := NewCluster(cs, clusterNS).WaitGone(ctx, engine.KindService, "desk-1-console", types.UID(tc.uid))
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("WaitGone = %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("WaitGone = %v, want %v", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if deletes != tc.deletes || len(verbs) != tc.deletes {
				t.Fatalf("requests %v, want %d deletes", verbs, tc.deletes)
			}
		})
	}

	t.Run("a Service that never goes: the deadline", func(t *testing.T) {
		cs := fake.NewClientset()
		cs.PrependReactor("delete", "services", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if err := NewCluster(cs, clusterNS).WaitGone(ctx, engine.KindService, "desk-1-console", ""); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitGone = %v", err)
		}
	})
}
