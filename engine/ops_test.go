package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestApply(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		e, f := newEngine()
		res, err := e.Apply(context.Background(), "desk", Spec{Image: "img:1", Size: 2})
		if err != nil || !res.Created || !res.Changed || res.Reconcile.Done() != 2 {
			t.Fatalf("Apply = %+v, %v", res, err)
		}
		w := f.writes()
		if w[0] != (act{"create", kCM, "corral-vdi-ctpool-desk"}) || w[len(w)-1] != (act{"patch", kCM, "corral-vdi-ctpool-desk"}) {
			t.Fatalf("writes %v: want the definition first and the status last", w)
		}
		cm := f.cm(ConfigMapName("desk"))
		want := Spec{Image: "img:1", Size: 2}
		want.Default()
		if cm.Data[KeySpec] != want.Encode() || cm.Labels[LabelPool] != "desk" {
			t.Fatalf("definition %q labels %v", cm.Data[KeySpec], cm.Labels)
		}
		if pods, pvcs, leases := f.count(); pods != 2 || pvcs != 2 || leases != 0 {
			t.Fatalf("%d pods %d pvcs %d leases", pods, pvcs, leases)
		}
	})

	t.Run("update keeps the status", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 1)
		f.mu.Lock()
		f.cms[ConfigMapName("desk")].Data[KeyStatus] = "desired: 1\n"
		f.cms[ConfigMapName("desk")].Labels["team"] = "a"
		f.mu.Unlock()
		f.fail("patch", kCM, ConfigMapName("desk"), errBoom, 0) // keep the reconcile from rewriting the status
		next := baseSpec(1)
		next.Image = "ghcr.io/example/desktop:2"
		res, err := e.Apply(context.Background(), "desk", next)
		if res.Created || !res.Changed {
			t.Fatalf("Apply = %+v", res)
		}
		var se *StepError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "status: boom") {
			t.Fatalf("Apply error %v, want the injected status failure", err)
		}
		cm := f.cm(ConfigMapName("desk"))
		if cm.Data[KeyStatus] != "desired: 1\n" || cm.Labels["team"] != "a" || cm.Data[KeySpec] != next.Encode() {
			t.Fatalf("ConfigMap after update: %v %v", cm.Labels, cm.Data)
		}
		if f.writes()[0] != (act{"cas", kCM, "corral-vdi-ctpool-desk"}) || !hasAct(f.writes(), "delete", kPod, "desk-1") {
			t.Fatalf("writes %v: want the update first, then desk-1 replaced", f.writes())
		}
	})

	t.Run("unchanged", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
			t.Fatal(err)
		}
		f.reset()
		res, err := e.Apply(context.Background(), "desk", Spec{Image: baseSpec(0).Image, Size: 2})
		if err != nil || res.Created || res.Changed || len(f.writes()) != 0 {
			t.Fatalf("Apply = %+v, %v, writes %v", res, err, f.writes())
		}
	})

	t.Run("warnings", func(t *testing.T) {
		e, _ := newEngine()
		res, err := e.Apply(context.Background(), "desk", Spec{Image: "img", Size: 0, Runtime: &Runtime{Backend: BackendSandboxd, Template: "tmpl"}})
		if err != nil || len(res.Warnings) != 1 {
			t.Fatalf("Apply = %+v, %v", res, err)
		}
	})

	t.Run("created by someone else meanwhile", func(t *testing.T) {
		e, f := newEngine()
		f.fail("create", kCM, ConfigMapName("desk"), ErrAlreadyExists, 0)
		_, err := e.Apply(context.Background(), "desk", Spec{Image: "img", Size: 1})
		if !errors.Is(err, ErrAlreadyExists) || !strings.Contains(err.Error(), "created by someone else meanwhile; run apply again") {
			t.Fatalf("Apply = %v", err)
		}
		if len(f.writes()) != 1 {
			t.Fatalf("writes %v", f.writes())
		}
	})

	// Between the apply's read and its write, someone else writes the
	// ConfigMap: another definition fails the apply; a status alone (a
	// reconciler's) does not, and is kept.
	for _, tt := range []struct {
		name, key, value string
		wantErr          bool
	}{
		{"changed by someone else meanwhile", KeySpec, "image: theirs\nsize: 2\n", true},
		{"a status written meanwhile", KeyStatus, "format: 1\ndesired: 1\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 0)
			once := true
			f.hook = func(a act) {
				if a.Verb == "cas" && once {
					once = false
					if err := f.PatchConfigMapData(context.Background(), ConfigMapName("desk"), tt.key, tt.value); err != nil {
						t.Error(err)
					}
				}
			}
			_, err := e.Apply(context.Background(), "desk", Spec{Image: "other", Size: 1})
			cm := f.cm(ConfigMapName("desk"))
			if tt.wantErr {
				if !errors.Is(err, ErrConflict) || !strings.HasPrefix(err.Error(), "update pool desk: the pool definition was changed by someone else meanwhile") {
					t.Fatalf("Apply = %v", err)
				}
				if cm.Data[KeySpec] != tt.value {
					t.Fatalf("their definition was written over:\n%s", cm.Data[KeySpec])
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply = %v", err)
			}
			if sp, err := ParseSpec(cm.Data[KeySpec]); err != nil || sp.Image != "other" {
				t.Fatalf("definition %q, %v", cm.Data[KeySpec], err)
			}
		})
	}

	t.Run("a status written at every try", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(1), 0)
		f.fail("cas", kCM, ConfigMapName("desk"), ErrConflict, 0)
		_, err := e.Apply(context.Background(), "desk", Spec{Image: "other", Size: 1})
		if !errors.Is(err, ErrConflict) || !strings.HasPrefix(err.Error(), "update pool desk: ") {
			t.Fatalf("Apply = %v", err)
		}
		if len(f.writes()) != definitionWriteTries {
			t.Fatalf("writes %v, want %d tries", f.writes(), definitionWriteTries)
		}
	})
}

func TestResize(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		inject    error
		wantErr   string
		wantIs    error
		wantPods  int
		wantFirst act
	}{
		{name: "grow", size: 4, wantPods: 4, wantFirst: act{"cas", kCM, "corral-vdi-ctpool-desk"}},
		{name: "shrink", size: 1, wantPods: 1, wantFirst: act{"cas", kCM, "corral-vdi-ctpool-desk"}},
		{name: "same size: no definition write", size: 2, wantPods: 2},
		{name: "conflict", size: 4, inject: ErrConflict, wantIs: ErrConflict, wantPods: 2,
			wantErr: "resize desk: the pool definition was changed by someone else meanwhile; look again and retry: "},
		{name: "negative", size: -1, wantErr: `invalid size "-1": must not be negative`, wantPods: 2},
		{name: "too large", size: MaxPoolSize + 1, wantErr: `invalid size "100000": must be at most 99999`, wantPods: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(2), 2)
			if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
				t.Fatal(err)
			}
			f.reset()
			if tt.inject != nil {
				f.fail("cas", kCM, ConfigMapName("desk"), tt.inject, 0)
			}
			res, err := e.Resize(context.Background(), "desk", tt.size)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
					t.Fatalf("Resize = %v, want %q", err, tt.wantErr)
				}
				for _, w := range f.writes() {
					if w.Kind != kCM || w.Verb != "cas" {
						t.Fatalf("member write after a refused resize: %v", f.writes())
					}
				}
			} else if err != nil {
				t.Fatalf("Resize: %v", err)
			}
			if pods, _, _ := f.count(); pods != tt.wantPods {
				t.Fatalf("%d pods, want %d", pods, tt.wantPods)
			}
			w := f.writes()
			if tt.wantFirst != (act{}) && (len(w) == 0 || w[0] != tt.wantFirst) {
				t.Fatalf("writes %v, want %v first", w, tt.wantFirst)
			}
			if tt.wantFirst == (act{}) && tt.wantErr == "" && len(w) != 0 {
				t.Fatalf("writes %v, want none", w)
			}
			if tt.wantErr == "" && res.Status.Desired != tt.size {
				t.Fatalf("status desired %d", res.Status.Desired)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	t.Run("size 0 first, members, definition last", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		seedMember(f, 3, baseSpec(2), StateStopped)
		f.add(ReconcilerLease(testNS, "desk", "desk-9", testNow.Add(-time.Hour)))
		if _, err := e.Delete(context.Background(), "desk"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		w := f.writes()
		if w[0] != (act{"cas", kCM, "corral-vdi-ctpool-desk"}) || w[len(w)-1] != (act{"delete", kCM, "corral-vdi-ctpool-desk"}) {
			t.Fatalf("writes %v: want size 0 first and the definition last", w)
		}
		for _, m := range []string{"desk-1", "desk-2", "desk-3"} {
			mw := memberWrites(w, m)
			if !hasAct(mw, "delete", kPVC, PVCName(m)) || mw[0].Kind != kLease || mw[len(mw)-1] != (act{"delete", kLease, LeaseName(m)}) {
				t.Fatalf("%s: writes %v", m, mw)
			}
		}
		if pods, pvcs, leases := f.count(); pods+pvcs+leases != 0 || f.cm(ConfigMapName("desk")) != nil {
			t.Fatalf("left %d pods %d pvcs %d leases, ConfigMap %v", pods, pvcs, leases, f.cm(ConfigMapName("desk")) != nil)
		}
	})

	t.Run("refuses while a member is claimed", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.add(claimAt("desk", "desk-2", "alice", testNow.Add(-3*time.Hour)))
		_, err := e.Delete(context.Background(), "desk")
		if !errors.Is(err, ErrClaimed) || !strings.Contains(err.Error(), `desk-2 (claimed by "alice")`) {
			t.Fatalf("Delete = %v", err)
		}
		cm := f.cm(ConfigMapName("desk"))
		if cm == nil || hasAct(f.writes(), "delete", kCM, ConfigMapName("desk")) {
			t.Fatal("the definition was removed")
		}
		if s, _ := ParseSpec(cm.Data[KeySpec]); s.Size != 0 {
			t.Fatalf("size %d, want 0", s.Size)
		}
		if len(memberWrites(f.writes(), "desk-2")) != 0 || f.pod("desk-2") == nil {
			t.Fatal("the claimed member was touched")
		}
		if f.pod("desk-1") != nil {
			t.Fatal("the unclaimed member was kept")
		}
	})

	t.Run("a failing member delete keeps the definition; running again finishes", func(t *testing.T) {
		e, f := newEngine()
		seedPool(f, "desk", baseSpec(2), 2)
		f.fail("delete", kPVC, "desk-2-data", errBoom, 0)
		_, err := e.Delete(context.Background(), "desk")
		if err == nil || !strings.HasPrefix(err.Error(), "delete desk: the definition stays, run delete again: reconcile: delete desk-2: delete PVC: boom") {
			t.Fatalf("Delete = %v", err)
		}
		if f.cm(ConfigMapName("desk")) == nil || f.lease(LeaseName("desk-2")) != nil {
			t.Fatal("definition removed or Lease left")
		}
		f.clearFailures()
		if _, err := e.Delete(context.Background(), "desk"); err != nil {
			t.Fatalf("second Delete: %v", err)
		}
		if pods, pvcs, leases := f.count(); pods+pvcs+leases != 0 || f.cm(ConfigMapName("desk")) != nil {
			t.Fatal("second Delete left objects")
		}
	})

	t.Run("broken definition: members and definition removed", func(t *testing.T) {
		e, f := newEngine()
		f.add(cmRaw("image: img\nsize: 2\nmode: persistent\n", ""))
		for n := 1; n <= 2; n++ {
			p, c := readyMember("desk", n, baseSpec(2))
			f.add(p, c)
		}
		if _, err := e.Delete(context.Background(), "desk"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if pods, pvcs, _ := f.count(); pods+pvcs != 0 || f.cm(ConfigMapName("desk")) != nil {
			t.Fatal("objects left")
		}
	})

	t.Run("missing pool succeeds", func(t *testing.T) {
		e, f := newEngine()
		if _, err := e.Delete(context.Background(), "desk"); err != nil || len(f.writes()) != 0 {
			t.Fatalf("Delete = %v, writes %v", err, f.writes())
		}
	})

	t.Run("missing definition with labelled objects", func(t *testing.T) {
		e, f := newEngine()
		p, c := readyMember("desk", 1, baseSpec(1))
		f.add(p, c)
		_, err := e.Delete(context.Background(), "desk")
		if !errors.Is(err, ErrPoolNotFound) || !strings.Contains(err.Error(), "1 Pods and 1 PVCs") || len(f.writes()) != 0 {
			t.Fatalf("Delete = %v, writes %v", err, f.writes())
		}
	})

	t.Run("objects remain Terminating", func(t *testing.T) {
		e, f := newEngine()
		e.WaitTimeout = 10 * time.Millisecond
		f.terminating = true
		seedPool(f, "desk", baseSpec(1), 1)
		_, err := e.Delete(context.Background(), "desk")
		if err == nil || !strings.Contains(err.Error(), "the definition stays, run delete again") || f.cm(ConfigMapName("desk")) == nil {
			t.Fatalf("Delete = %v", err)
		}
	})
}

// Persistent mode fails at apply, reconcile, claim and release, with no member write.
func TestPersistentModeRefused(t *testing.T) {
	tests := []struct {
		name string
		run  func(e *Engine) error
	}{
		{"apply", func(e *Engine) error {
			_, err := e.Apply(context.Background(), "desk", Spec{Image: "img", Size: 2, Mode: ModePersistent})
			return err
		}},
		{"reconcile", func(e *Engine) error { _, err := e.Reconcile(context.Background(), "desk"); return err }},
		{"claim", func(e *Engine) error { _, err := e.Claim(context.Background(), "desk", "bob"); return err }},
		{"release", func(e *Engine) error {
			_, err := e.Release(context.Background(), "desk", "desk-1", "alice")
			return err
		}},
		{"release --force", func(e *Engine) error {
			_, err := e.ForceRelease(context.Background(), "desk", "desk-1")
			return err
		}},
		{"resize", func(e *Engine) error { _, err := e.Resize(context.Background(), "desk", 3); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.add(cmRaw("image: img\nsize: 2\nmode: persistent\n", ""))
			seedMember(f, 1, baseSpec(2), StateReady)
			seedMember(f, 2, baseSpec(2), StateStopped)
			f.add(claimAt("desk", "desk-1", "alice", testNow))
			errIs(t, tt.run(e), ErrPersistentMode)
			for _, w := range f.writes() {
				if w.Kind != kCM {
					t.Fatalf("member write %v", w)
				}
				if tt.name != "reconcile" {
					t.Fatalf("write %v", w)
				}
			}
		})
	}
}

// Bad input changes nothing.
func TestBadInputChangesNothing(t *testing.T) {
	apply := func(pool string, s Spec) func(e *Engine) error {
		return func(e *Engine) error { _, err := e.Apply(context.Background(), pool, s); return err }
	}
	claim := func(id string) func(e *Engine) error {
		return func(e *Engine) error { _, err := e.Claim(context.Background(), "desk", id); return err }
	}
	release := func(id string) func(e *Engine) error {
		return func(e *Engine) error {
			_, err := e.Release(context.Background(), "desk", "desk-1", id)
			return err
		}
	}
	resize := func(pool string, n int) func(e *Engine) error {
		return func(e *Engine) error { _, err := e.Resize(context.Background(), pool, n); return err }
	}
	storedSpec := func(yaml string, op func(e *Engine) error) func(e *Engine, f *fakeCluster) error {
		return func(e *Engine, f *fakeCluster) error {
			f.mu.Lock()
			f.cms[ConfigMapName("desk")].Data[KeySpec] = yaml
			f.mu.Unlock()
			return op(e)
		}
	}
	plain := func(op func(e *Engine) error) func(e *Engine, f *fakeCluster) error {
		return func(e *Engine, _ *fakeCluster) error { return op(e) }
	}
	const malformed, unknown = "image: [\nsize: 2\n", "image: img\nsize: 2\nreplicas: 3\n"
	tests := []struct {
		name    string
		run     func(e *Engine, f *fakeCluster) error
		wantErr string
	}{
		{"apply: negative size", plain(apply("desk", Spec{Image: "img", Size: -1})), "must not be negative"},
		{"apply: bad quantity", plain(apply("desk", Spec{Image: "img", Size: 1, CPU: "lots"})), `invalid cpu "lots"`},
		{"apply: zero memory", plain(apply("desk", Spec{Image: "img", Size: 1, Memory: "0"})), "greater than zero"},
		{"apply: no image", plain(apply("desk", Spec{Size: 1})), "image: is required"},
		{"apply: invalid pool name", plain(apply("Desk", Spec{Image: "img", Size: 1})), "invalid pool"},
		{"apply: pool name too long", plain(apply(strings.Repeat("d", 41), Spec{Image: "img", Size: 1})), "at most 40"},
		{"apply: unknown backend", plain(apply("desk", Spec{Image: "img", Size: 1, Runtime: &Runtime{Backend: "vmware"}})), "runtime.backend"},
		{"apply: sandboxd without template", plain(apply("desk", Spec{Image: "img", Size: 1, Runtime: &Runtime{Backend: BackendSandboxd}})), "runtime.template"},
		{"claim: empty identity", plain(claim("")), "must not be empty"},
		{"claim: oversized identity", plain(claim(strings.Repeat("a", 300))), "at most 253"},
		{"claim: NUL", plain(claim("a\x00b")), "U+0000"},
		{"claim: reserved identity", plain(claim(ReconcilerIdentity)), "reserved"},
		{"release: empty identity", plain(release("")), "must not be empty"},
		{"release: ESC", plain(release("\x1b]0;pwned\x07")), "U+001B"},
		{"release: reserved identity", plain(release(ReconcilerIdentity)), "reserved"},
		{"resize: negative", plain(resize("desk", -2)), "must not be negative"},
		{"resize: invalid pool name", plain(resize("-desk", 2)), "invalid pool"},
		{"claim on malformed spec", storedSpec(malformed, claim("bob")), "invalid spec"},
		{"claim on unknown field", storedSpec(unknown, claim("bob")), `unknown field "replicas"`},
		{"release on malformed spec", storedSpec(malformed, release("alice")), "invalid spec"},
		{"release on unknown field", storedSpec(unknown, release("alice")), `unknown field "replicas"`},
		{"resize on malformed spec", storedSpec(malformed, resize("desk", 3)), "invalid spec"},
		{"resize on bad quantity", storedSpec("image: img\nsize: 2\nmemory: lots\n", resize("desk", 3)), `invalid memory "lots"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(2), 2)
			f.add(claimAt("desk", "desk-1", "alice", testNow))
			before := fmt.Sprint(f.count())
			err := tt.run(e, f)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if w := f.writes(); len(w) != 0 {
				t.Fatalf("writes %v", w)
			}
			if after := fmt.Sprint(f.count()); after != before {
				t.Fatalf("objects %s, were %s", after, before)
			}
		})
	}
}

func TestDeleteKeepsTheDefinitionOnFailure(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(f *fakeCluster)
		wantErr string
	}{
		{"another reconciler works on a member", func(f *fakeCluster) {
			f.add(ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-time.Minute)))
		}, "delete desk: 1 members still have objects (a reconciler may be working on them): desk-1; run delete again"},
		{"size 0 cannot be written", func(f *fakeCluster) {
			f.fail("cas", kCM, ConfigMapName("desk"), ErrConflict, 0)
		}, "delete desk: set size 0: the pool definition was changed by someone else meanwhile"},
		{"a running reconciler's Lease stays", func(f *fakeCluster) {
			f.add(ReconcilerLease(testNS, "desk", "desk-9", testNow.Add(-time.Minute)))
		}, "delete desk: the definition stays while a reconciler holds a member's Lease: desk-9 (under maintenance, stale at 2025-06-01T12:09:00Z)"},
		{"a leftover Lease cannot be removed", func(f *fakeCluster) {
			l := ReconcilerLease(testNS, "desk", "desk-9", testNow.Add(-time.Minute))
			l.Spec.HolderIdentity = nil
			f.add(l)
			f.fail("delete", kLease, LeaseName("desk-9"), errBoom, 0)
		}, "delete desk: lease corral-vdi-ct-desk-9: boom"},
		{"the definition cannot be removed", func(f *fakeCluster) {
			f.fail("delete", kCM, ConfigMapName("desk"), errBoom, 0)
		}, "delete desk: definition: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			seedPool(f, "desk", baseSpec(1), 1)
			tt.setup(f)
			_, err := e.Delete(context.Background(), "desk")
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Delete = %v, want %q", err, tt.wantErr)
			}
			if f.cm(ConfigMapName("desk")) == nil {
				t.Fatal("the definition was removed")
			}
		})
	}
}
