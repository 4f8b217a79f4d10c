package engine

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// A claimed member that lost its Pod is started again from the source its PVC
// records, never from a changed pool definition: the sequence of the issue
// (claim desk alice; apply a new image and disk; delete the Pod; reconcile)
// brings back the old image, the member stays drifted, and its PVC is not
// touched. A PVC made before the records (none) takes the current source; a
// record that cannot be used does too, with a Problem on the member.
func TestClaimedMemberRestartsFromItsRecordedSource(t *testing.T) {
	oldSpec := baseSpec(1)
	newSpec := oldSpec
	newSpec.Image, newSpec.Disk = "ghcr.io/example/desktop:2", "50Gi"
	other := oldSpec
	other.Image = "ghcr.io/example/desktop:3"
	for _, tc := range []struct {
		name string
		// record rewrites the PVC's record before the Pod is lost (nil: kept).
		record func(annotations map[string]string)
		// byClaim: the holder's own claim again starts the member, not a reconcile.
		byClaim     bool
		wantImage   string
		wantDrift   bool
		wantProblem string
	}{
		{name: "recorded source, by reconcile", wantImage: oldSpec.Image, wantDrift: true},
		{name: "recorded source, by the holder's claim", byClaim: true, wantImage: oldSpec.Image, wantDrift: true},
		{name: "no record (a PVC made before records): current source", wantImage: newSpec.Image,
			record: func(a map[string]string) { delete(a, AnnotationSource) }},
		{name: "hand-edited record that does not parse: current source and a Problem", wantImage: newSpec.Image, wantProblem: "does not parse",
			record: func(a map[string]string) { a[AnnotationSource] = `{"image": "x:1", cpu` }},
		{name: "record with an unknown field: current source and a Problem", wantImage: newSpec.Image, wantProblem: "unknown field",
			record: func(a map[string]string) { a[AnnotationSource] = `{"image":"x:1","gpu":"8"}` }},
		{name: "record of an invalid source: current source and a Problem", wantImage: newSpec.Image, wantProblem: "not valid",
			record: func(a map[string]string) { a[AnnotationSource] = `{"image":""}` }},
		{name: "record edited to another valid source: its hash is not the label's", wantImage: newSpec.Image, wantProblem: "not to the source label",
			record: func(a map[string]string) { a[AnnotationSource] = other.SourceRecord() }},
		{name: "empty record: current source and a Problem", wantImage: newSpec.Image, wantProblem: "does not parse",
			record: func(a map[string]string) { a[AnnotationSource] = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, f := newEngine()
			seedPool(f, "desk", oldSpec, 1)
			if res, err := e.Claim(ctx, "desk", "alice"); err != nil || res.Member != "desk-1" {
				t.Fatalf("Claim = %+v, %v", res, err)
			}
			if _, err := e.Apply(ctx, "desk", newSpec); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if p := f.pod("desk-1"); p == nil || p.Spec.Containers[0].Image != oldSpec.Image {
				t.Fatal("apply changed the claimed member")
			}
			f.mu.Lock()
			if tc.record != nil {
				tc.record(f.pvcs["desk-1-data"].Annotations)
			}
			delete(f.pods, "desk-1") // kubectl delete pod desk-1
			f.mu.Unlock()
			pvcBefore := f.pvc("desk-1-data")
			f.reset()

			if tc.byClaim {
				res, err := e.Claim(ctx, "desk", "alice")
				if err != nil || !res.Existing || !res.Started {
					t.Fatalf("Claim = %+v, %v", res, err)
				}
			} else if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}

			pod := f.pod("desk-1")
			if pod == nil {
				t.Fatal("the claimed member was not started")
			}
			if got := pod.Spec.Containers[0].Image; got != tc.wantImage {
				t.Fatalf("the Pod runs %s, want %s", got, tc.wantImage)
			}
			wantHash := newSpec.SourceHash()
			if tc.wantImage == oldSpec.Image {
				wantHash = oldSpec.SourceHash()
			}
			if got := pod.Labels[LabelSource]; got != wantHash {
				t.Fatalf("the Pod is labelled with source %s, want %s", got, wantHash)
			}
			for _, a := range f.writes() {
				if a.Kind == kPVC {
					t.Fatalf("the PVC was written: %v", a)
				}
			}
			pvc := f.pvc("desk-1-data")
			if pvc.UID != pvcBefore.UID || pvc.ResourceVersion != pvcBefore.ResourceVersion {
				t.Fatal("the PVC changed")
			}
			if q := pvc.Spec.Resources.Requests["storage"]; q.Cmp(resource.MustParse("5Gi")) != 0 {
				t.Fatalf("the PVC asks for %s, want the old 5Gi", q.String())
			}

			snap, _ := f.Snapshot(ctx, "desk")
			v := Observe(snap, testNow)
			m := v.Member("desk-1")
			if m.Drift != tc.wantDrift {
				t.Fatalf("drift %v, want %v", m.Drift, tc.wantDrift)
			}
			if v.Status.Drifted != btoi(tc.wantDrift) {
				t.Fatalf("status counts %d drifted", v.Status.Drifted)
			}
			problems := strings.Join(m.Problems, "; ")
			switch {
			case tc.wantProblem == "" && problems != "":
				t.Fatalf("problems %q", problems)
			case tc.wantProblem != "" && !strings.Contains(problems, tc.wantProblem):
				t.Fatalf("problems %q, want one saying %q", problems, tc.wantProblem)
			}
			// Reconciles with nothing changed leave it as it is (the first
			// may record the status).
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatalf("Reconcile again: %v", err)
			}
			f.reset()
			if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatalf("Reconcile again: %v", err)
			}
			if w := f.writes(); len(w) != 0 {
				t.Fatalf("a reconcile with nothing changed wrote %v", w)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Every PVC of a claimed member carries the holder's display annotation,
// also one a reconcile rebuilds (the member lost its Pod and PVC) and one
// Claim's start creates; and it records the source it was built from.
func TestClaimedMemberRebuiltPVCShowsItsHolder(t *testing.T) {
	spec := baseSpec(1)
	for _, tc := range []struct {
		name    string
		byClaim bool
	}{{name: "rebuilt by reconcile"}, {name: "created by the holder's claim", byClaim: true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e, f := newEngine()
			f.add(BuildConfigMap(testNS, "desk", spec))
			f.add(claimAt("desk", "desk-1", "alice", testNow))
			if tc.byClaim {
				if res, err := e.Claim(ctx, "desk", "alice"); err != nil || !res.Started {
					t.Fatalf("Claim = %+v, %v", res, err)
				}
			} else if _, err := e.Reconcile(ctx, "desk"); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			pvc := f.pvc("desk-1-data")
			if pvc == nil || f.pod("desk-1") == nil {
				t.Fatal("the claimed member was not rebuilt")
			}
			if got := pvc.Annotations[AnnotationAssignedTo]; got != "alice" {
				t.Fatalf("%s = %q, want alice", AnnotationAssignedTo, got)
			}
			if got := pvc.Annotations[AnnotationSource]; got != spec.SourceRecord() {
				t.Fatalf("recorded source %q, want %q", got, spec.SourceRecord())
			}
		})
	}
}
