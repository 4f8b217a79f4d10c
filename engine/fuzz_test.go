package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzParseSpec: any input either fails cleanly or yields a valid spec whose
// encoding parses back to the same spec and source hash.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"image: img\nsize: 3\n",
		"image: img\nsize: 3\ncpu: 500m\nmemory: 2048Mi\ndisk: 1Ti\nstorageClass: fast\nprivileged: true\ninit: true\n",
		"image: img\nmode: persistent\n",
		"image: img\nruntime:\n  backend: sandboxd\n  template: img\n  ttlSeconds: 0\n",
		"image: img\nruntime:\n  backend: cocoon\n  image: u\n  os: windows\n",
		`{"image":"img","size":1,"runtime":{"backend":"standard","runtimeClassName":"kata"}}`,
		"image: [\n",
		"size: -1\n",
		"image: img\ncpu: lots\n",
		"image: img\nunknown: 1\n",
		"image: user:pw@registry.example/desk:1\n",
		"image: img\npodSecurity: restricted\nrunAsUser: 5\n",
		"image: img\npodSecurity: privileged\n",
		"image: img\nimagePullSecrets: [regcred, mirror]\n",
		"image: img\nimagePullSecrets: []\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		s, err := ParseSpec(data)
		if err != nil {
			if !reflect.DeepEqual(s, Spec{}) {
				t.Fatalf("error %v with a non-zero spec %#v", err, s)
			}
			return
		}
		if verr := s.Validate(); verr != nil {
			t.Fatalf("parsed spec does not validate: %v", verr)
		}
		back, err := ParseSpec(s.Encode())
		if err != nil {
			t.Fatalf("encoding does not parse back: %v\n%s", err, s.Encode())
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the spec:\n%#v\n%#v", s, back)
		}
		if h := s.SourceHash(); len(h) != 16 || h != back.SourceHash() {
			t.Fatalf("source hash %q vs %q", h, back.SourceHash())
		}
		// The builders accept every valid spec.
		_ = BuildPod("ns", "desk", 1, s)
		_ = BuildPVC("ns", "desk", 1, s)
	})
}

// FuzzParseStatus: any input either fails cleanly or yields a status whose
// encoding is stable.
func FuzzParseStatus(f *testing.F) {
	full := Status{Desired: 2, Observed: 2, Ready: 1, Claimed: 1, Free: 0, Exhausted: true, Source: "0123456789abcdef",
		Members: []MemberRow{{Name: "desk-1", State: StateReady, Holder: "alice"}, {Name: "desk-2", State: StateUnschedulable, Message: "0/3 nodes"}},
		Errors:  []string{"create desk-2: boom"}, UpdatedAt: &testNow}
	for _, s := range []string{full.Encode(), "", "desired: [\n", "members: 3\n", "updatedAt: yesterday\n", `{"desired":1}`, "- a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		s, err := ParseStatus(data)
		if err != nil {
			return
		}
		enc := s.Encode()
		back, err := ParseStatus(enc)
		if err != nil {
			t.Fatalf("encoding does not parse back: %v\n%s", err, enc)
		}
		if back.Encode() != enc {
			t.Fatalf("encoding not stable:\n%s\n---\n%s", enc, back.Encode())
		}
		if !s.sameContent(back) {
			t.Fatal("sameContent is false for a round trip")
		}
	})
}

// FuzzObserveLease: random Lease fields never panic; broken ones are reported
// as Problems, and a Lease always keeps the member from being free.
func FuzzObserveLease(f *testing.F) {
	f.Add("alice", true, int32(3600), true, int64(-60), true, int64(-60), true, int64(0))
	f.Add("", false, int32(0), false, int64(0), false, int64(0), false, int64(0))
	f.Add(ReconcilerIdentity, true, int32(600), true, int64(-700), true, int64(-700), false, int64(0))
	f.Add("bob", true, int32(-5), true, int64(1<<40), true, int64(-1<<40), false, int64(-3600))
	f.Add("carol", true, int32(1<<31-1), true, int64(86400*365*100), false, int64(0), false, int64(0))
	f.Add("x\x00y", true, int32(1), false, int64(0), false, int64(0), false, int64(-1<<62))
	f.Fuzz(func(t *testing.T, holder string, hasHolder bool, secs int32, hasSecs bool, acquire int64, hasAcquire bool, renew int64, hasRenew bool, created int64) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName("desk-1"), Labels: PoolLabels("desk")}}
		if created != 0 {
			l.CreationTimestamp = metav1.NewTime(testNow.Add(time.Duration(created) * time.Second))
		}
		if hasHolder {
			l.Spec.HolderIdentity = &holder
		}
		if hasSecs {
			l.Spec.LeaseDurationSeconds = &secs
		}
		if hasAcquire {
			mt := metav1.NewMicroTime(testNow.Add(time.Duration(acquire) * time.Second))
			l.Spec.AcquireTime = &mt
		}
		if hasRenew {
			mt := metav1.NewMicroTime(testNow.Add(time.Duration(renew) * time.Second))
			l.Spec.RenewTime = &mt
		}
		spec := baseSpec(1)
		p, c := readyMember("desk", 1, spec)
		v := Observe(snapOf(cmOf(spec), p, c, l), testNow)
		m := v.Member("desk-1")
		if m == nil || m.LeaseRead() == nil {
			t.Fatal("the member or its Lease's reading is missing")
		}
		// A user's claim is Claim, anything else Hold: never both.
		if (m.Claim != nil) != m.Claimed || (m.Claim != nil) == (m.Hold != nil) {
			t.Fatalf("claim %v (claimed %v), hold %v", m.Claim, m.Claimed, m.Hold)
		}
		// A hold is maintenance when the reconciler holds the Lease, else
		// unheld: its holder is empty.
		if h := m.Hold; h != nil && (h.Maintenance != (h.Holder == ReconcilerIdentity) || !h.Maintenance && h.Holder != "") {
			t.Fatalf("hold %+v: maintenance %v, unheld %v", *h, m.InMaintenance(), m.Unheld())
		}
		if m.Free {
			t.Fatal("a member with a Lease is free")
		}
		if b2i(m.Claimed)+b2i(m.InMaintenance())+b2i(m.Unheld()) != 1 {
			t.Fatalf("claimed %v, maintenance %v, unheld %v: exactly one must hold", m.Claimed, m.InMaintenance(), m.Unheld())
		}
		problems := strings.Join(m.Problems, "; ")
		if (!hasHolder || holder == "") && !strings.Contains(problems, "no holder") {
			t.Fatalf("no holder but problems %q", problems)
		}
		if hasSecs && secs <= 0 && !strings.Contains(problems, "not positive") {
			t.Fatalf("duration %d but problems %q", secs, problems)
		}
		if !hasSecs && !strings.Contains(problems, "no duration") {
			t.Fatalf("no duration but problems %q", problems)
		}
		if m.LeaseRead().Duration <= 0 {
			t.Fatalf("duration %v", m.LeaseRead().Duration)
		}
		if m.Claimed && v.Status.Claimed != 1 {
			t.Fatalf("claimed member not counted: %+v", v.Status)
		}
		if v.Status.Free != 0 || !v.Status.Exhausted {
			t.Fatalf("status %+v", v.Status)
		}
	})
}

// FuzzHandMadeConfigMap: a pool ConfigMap of any shape (no data, any spec,
// any status, any labels) goes through Observe, Reconcile, ApplyEdit,
// Resize, Claim, Release and Delete on the fake cluster without a panic, and
// Delete leaves either the pool gone or the definition in place with an error.
func FuzzHandMadeConfigMap(f *testing.F) {
	f.Add(false, "", "", "", 1)
	f.Add(true, "image: img\nsize: 2\n", "desired: 2\n", "nodata", 2)
	f.Add(true, "image: img\nsize: 2\nmode: persistent\n", "", "", 0)
	f.Add(true, "image: [\n", "members: 3\n", "x", 3)
	f.Add(true, "size: 100000\n", "{", "nodata", 1)
	f.Add(true, `{"image":"i","size":1,"runtime":{"backend":"sandboxd","template":"t","ttlSeconds":99999}}`, "", "", 1)
	f.Fuzz(func(t *testing.T, hasData bool, spec, status, label string, members int) {
		if s, err := ParseSpec(spec); err == nil && s.Size > 64 {
			t.Skip("a large pool only takes time on the fake; its shape is what is fuzzed")
		}
		ctx := context.Background()
		e, fc := newEngine()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName("nodata")}}
		if label != "" {
			cm.Labels = map[string]string{LabelPool: label}
		}
		if hasData {
			cm.Data = map[string]string{}
			if spec != "" {
				cm.Data[KeySpec] = spec
			}
			if status != "" {
				cm.Data[KeyStatus] = status
			}
		}
		fc.add(cm)
		for n := 1; n <= members%4; n++ {
			p, c := readyMember("nodata", n, baseSpec(1))
			fc.add(p, c)
		}
		if members%2 == 1 {
			fc.add(claimAt("nodata", "nodata-1", "alice", testNow))
		}
		snap, _ := fc.Snapshot(ctx, "nodata")
		_ = Observe(snap, testNow)
		_, _ = e.Reconcile(ctx, "nodata")
		_, _ = e.ApplyEdit(ctx, "nodata", func(s *Spec) (Spec, error) {
			if s == nil {
				return Spec{Image: "img", Size: 1}, nil
			}
			return *s, nil
		}, false)
		_, _ = e.Resize(ctx, "nodata", 1)
		_, _ = e.Claim(ctx, "nodata", "bob")
		_, _ = e.Release(ctx, "nodata", "nodata-1", "alice")
		_, err := e.Delete(ctx, "nodata")
		if err == nil && fc.cm(ConfigMapName("nodata")) != nil {
			t.Fatal("Delete succeeded but the definition is still there")
		}
		if err != nil && fc.cm(ConfigMapName("nodata")) == nil {
			t.Fatalf("Delete failed (%v) after removing the definition", err)
		}
	})
}
