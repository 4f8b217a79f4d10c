package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A release may wait minutes on Terminating objects; an apply or a resize
// meanwhile must not make it build a stale member, or one above the new size.
// It reads the definition again just before the rebuild.
func TestReleaseRebuildsFromTheDefinitionReadAgain(t *testing.T) {
	newImage := baseSpec(2)
	newImage.Image = "ghcr.io/example/desktop:2"
	for _, tc := range []struct {
		name      string
		meanwhile Spec   // written as the definition while the release waits
		broken    string // or this text as the definition
		deleted   bool   // or the definition deleted
		recreated bool
		wantImage string
		wantErr   string
	}{
		{name: "apply of a new image", meanwhile: newImage, recreated: true, wantImage: newImage.Image},
		{name: "resize below the index", meanwhile: baseSpec(0)},
		{name: "resize to the index", meanwhile: baseSpec(1), recreated: true, wantImage: baseSpec(1).Image},
		{name: "definition broken", broken: "image: [", wantErr: "could not be read again"},
		{name: "pool deleted", deleted: true, wantErr: "could not be read again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, f := releaseFixture(t)
			f.hook = func(a act) {
				// The last write before the waits: the release has taken
				// its spec long before.
				if a != (act{"delete", kSvc, "desk-1-console"}) {
					return
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				cm := f.cms[ConfigMapName("desk")]
				switch {
				case tc.deleted:
					delete(f.cms, ConfigMapName("desk"))
				case tc.broken != "":
					cm.Data[KeySpec] = tc.broken
				default:
					cm.Data[KeySpec] = tc.meanwhile.Encode()
				}
				cm.ResourceVersion = f.nextRV()
			}
			res, err := e.Release(context.Background(), "desk", "desk-1", "alice")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Release: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Release = %v, want an error saying %q", err, tc.wantErr)
			}
			if res.Recreated != tc.recreated {
				t.Fatalf("Recreated = %v, want %v", res.Recreated, tc.recreated)
			}
			pod := f.pod("desk-1")
			if !tc.recreated {
				if pod != nil || f.pvc("desk-1-data") != nil {
					t.Fatal("a member was built outside the definition read last")
				}
			} else {
				if pod == nil {
					t.Fatal("no member was built")
				}
				if got := pod.Spec.Containers[0].Image; got != tc.wantImage {
					t.Fatalf("rebuilt with %s, want %s", got, tc.wantImage)
				}
				if got, want := pod.Labels[LabelSource], tc.meanwhile.SourceHash(); got != want {
					t.Fatalf("rebuilt with source %s, want %s", got, want)
				}
			}
			if f.lease(LeaseName("desk-1")) != nil {
				t.Fatal("the release left its Lease")
			}
		})
	}
}

// The release waits for the console Service's deletion; a wait that fails
// leaves the member under maintenance, as for the Pod and the PVC.
func TestReleaseServiceWaitFails(t *testing.T) {
	e, f := releaseFixture(t)
	f.fail("wait", kSvc, "desk-1-console", errors.New("connection refused"), 0)
	_, err := e.Release(context.Background(), "desk", "desk-1", "alice")
	if err == nil || !strings.Contains(err.Error(), "Service desk-1-console") {
		t.Fatalf("Release = %v", err)
	}
	if hasAct(f.writes(), "create", kPod, "desk-1") {
		t.Fatal("rebuilt before the console Service was gone")
	}
	assertHeldBy(t, f, "desk-1", ReconcilerIdentity)
}
