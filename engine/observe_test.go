package engine

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// --- object helpers ---

type podMod func(*corev1.Pod)

func podOf(spec Spec, n int, mods ...podMod) *corev1.Pod {
	p := BuildPod(testNS, "desk", n, spec)
	for _, m := range mods {
		m(p)
	}
	return p
}

func pvcOf(spec Spec, n int) *corev1.PersistentVolumeClaim { return BuildPVC(testNS, "desk", n, spec) }

func phase(ph corev1.PodPhase) podMod { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func cond(typ corev1.PodConditionType, st corev1.ConditionStatus, reason, msg string) podMod {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: typ, Status: st, Reason: reason, Message: msg})
	}
}

var (
	running = phase(corev1.PodRunning)
	pending = phase(corev1.PodPending)
	ready   = cond(corev1.PodReady, corev1.ConditionTrue, "", "")
)

func waitingIn(reason, msg string, init bool) podMod {
	return func(p *corev1.Pod) {
		cs := corev1.ContainerStatus{Name: ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
		if init {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, cs)
		} else {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
		}
	}
}

func deletingPod(p *corev1.Pod) { t := metav1.NewTime(testNow); p.DeletionTimestamp = &t }

func deletingPVC(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	t := metav1.NewTime(testNow)
	c.DeletionTimestamp = &t
	return c
}

func relabel(key, value string) podMod { return func(p *corev1.Pod) { p.Labels[key] = value } }

// snapOf sorts objects into a snapshot of pool desk with the given ConfigMap (nil: no definition).
func snapOf(cm *corev1.ConfigMap, objs ...any) Snapshot {
	s := Snapshot{Namespace: testNS, Pool: "desk", ConfigMap: cm}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			s.Pods = append(s.Pods, o)
		case *corev1.PersistentVolumeClaim:
			s.PVCs = append(s.PVCs, o)
		case *coordinationv1.Lease:
			s.Leases = append(s.Leases, o)
		default:
			panic(fmt.Sprintf("snapOf: %T", o))
		}
	}
	return s
}

func cmOf(spec Spec) *corev1.ConfigMap { return BuildConfigMap(testNS, "desk", spec) }

func cmRaw(specYAML, statusYAML string) *corev1.ConfigMap {
	cm := cmOf(baseSpec(0))
	cm.Data = map[string]string{KeySpec: specYAML, KeyStatus: statusYAML}
	return cm
}

func mustMember(t *testing.T, v PoolView, name string) *Member {
	t.Helper()
	m := v.Member(name)
	if m == nil {
		names := make([]string, len(v.Members))
		for i := range v.Members {
			names[i] = v.Members[i].Name
		}
		t.Fatalf("no member %s in %v", name, names)
	}
	return m
}

// --- states ---

func TestObserveStates(t *testing.T) {
	spec := baseSpec(1)
	pvc := func() *corev1.PersistentVolumeClaim { return pvcOf(spec, 1) }
	tests := []struct {
		name    string
		objs    []any
		want    State
		message string
	}{
		{"Terminating from the Pod", []any{podOf(spec, 1, running, ready, deletingPod), pvc()}, StateTerminating, ""},
		{"Terminating from the PVC without a Pod", []any{deletingPVC(pvc())}, StateTerminating, ""},
		{"Terminating beats Failed", []any{podOf(spec, 1, phase(corev1.PodFailed), deletingPod), pvc()}, StateTerminating, ""},
		{"a Terminating PVC does not override the Pod", []any{podOf(spec, 1, running, ready), deletingPVC(pvc())}, StateReady, ""},
		{"Missing", nil, StateMissing, ""},
		{"Stopped", []any{pvc()}, StateStopped, ""},
		{"Failed phase", []any{podOf(spec, 1, phase(corev1.PodFailed), func(p *corev1.Pod) { p.Status.Reason, p.Status.Message = "Evicted", "low on memory" }), pvc()}, StateFailed, "Evicted: low on memory"},
		{"Failed phase without reason", []any{podOf(spec, 1, phase(corev1.PodFailed)), pvc()}, StateFailed, "Pod failed"},
		{"Succeeded is Failed", []any{podOf(spec, 1, phase(corev1.PodSucceeded)), pvc()}, StateFailed, "Pod completed: the desktop exited"},
		{"CrashLoopBackOff", []any{podOf(spec, 1, running, waitingIn("CrashLoopBackOff", "back-off 5m0s", false)), pvc()}, StateFailed, "CrashLoopBackOff: back-off 5m0s"},
		{"ImagePullBackOff", []any{podOf(spec, 1, pending, waitingIn("ImagePullBackOff", "", false)), pvc()}, StateFailed, "ImagePullBackOff"},
		{"ErrImagePull", []any{podOf(spec, 1, pending, waitingIn("ErrImagePull", "not found", false)), pvc()}, StateFailed, "ErrImagePull: not found"},
		{"ErrImageNeverPull", []any{podOf(spec, 1, pending, waitingIn("ErrImageNeverPull", "Container image \"d:1\" is not present with pull policy of Never", false)), pvc()}, StateFailed, "ErrImageNeverPull: Container image \"d:1\" is not present with pull policy of Never"},
		{"InvalidImageName", []any{podOf(spec, 1, pending, waitingIn("InvalidImageName", "", false)), pvc()}, StateFailed, "InvalidImageName"},
		{"CreateContainerError", []any{podOf(spec, 1, pending, waitingIn("CreateContainerError", "", false)), pvc()}, StateFailed, "CreateContainerError"},
		{"init container CrashLoopBackOff", []any{podOf(spec, 1, pending, waitingIn("CrashLoopBackOff", "", true)), pvc()}, StateFailed, "CrashLoopBackOff"},
		{"init container ErrImagePull", []any{podOf(spec, 1, pending, waitingIn("ErrImagePull", "", true)), pvc()}, StateFailed, "ErrImagePull"},
		{"Failed beats Ready", []any{podOf(spec, 1, running, ready, waitingIn("CrashLoopBackOff", "", false)), pvc()}, StateFailed, "CrashLoopBackOff"},
		{"Failed beats Unschedulable", []any{podOf(spec, 1, pending, cond(corev1.PodScheduled, corev1.ConditionFalse, "Unschedulable", "0/3 nodes"), waitingIn("ErrImagePull", "", true)), pvc()}, StateFailed, "ErrImagePull"},
		{"Pod without its PVC is Failed", []any{podOf(spec, 1, running, ready)}, StateFailed, "data PVC desk-1-data is missing"},
		{"harmless waiting reason", []any{podOf(spec, 1, pending, waitingIn("ContainerCreating", "", false)), pvc()}, StateStarting, ""},
		{"Unschedulable", []any{podOf(spec, 1, pending, cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, "0/3 nodes are available: 3 Insufficient memory.")), pvc()}, StateUnschedulable, "0/3 nodes are available: 3 Insufficient memory."},
		{"not scheduled for another reason", []any{podOf(spec, 1, pending, cond(corev1.PodScheduled, corev1.ConditionFalse, "SchedulingGated", "")), pvc()}, StateStarting, ""},
		{"Unschedulable condition on a Running Pod", []any{podOf(spec, 1, running, cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, "x")), pvc()}, StateStarting, ""},
		{"Ready", []any{podOf(spec, 1, running, ready), pvc()}, StateReady, ""},
		{"Running not Ready", []any{podOf(spec, 1, running, cond(corev1.PodReady, corev1.ConditionFalse, "", "")), pvc()}, StateStarting, ""},
		{"Ready condition while Pending", []any{podOf(spec, 1, pending, ready), pvc()}, StateStarting, ""},
		{"Pending", []any{podOf(spec, 1, pending), pvc()}, StateStarting, ""},
		{"no status yet", []any{podOf(spec, 1), pvc()}, StateStarting, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Observe(snapOf(cmOf(spec), tt.objs...), testNow)
			m := mustMember(t, v, "desk-1")
			if m.State != tt.want || m.Message != tt.message {
				t.Fatalf("state %s %q, want %s %q", m.State, m.Message, tt.want, tt.message)
			}
			if row := v.Status.Members[0]; row.State != tt.want || row.Message != tt.message {
				t.Fatalf("status row %+v disagrees with the member", row)
			}
		})
	}
}

// --- markers and free ---

func TestObserveMarkers(t *testing.T) {
	spec := baseSpec(2)
	old := spec
	old.Image = "ghcr.io/example/desktop:0"
	readyOf := func(s Spec, n int) []any { return []any{podOf(s, n, running, ready), pvcOf(s, n)} }
	with := func(objs []any, more ...any) []any { return append(objs, more...) }
	leaseAt := func(holder string, secs int32, acquire, renew *time.Time) *coordinationv1.Lease {
		l := ClaimLease(testNS, "desk", "desk-1", holder, testNow)
		l.Spec.LeaseDurationSeconds = &secs
		l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil
		if acquire != nil {
			mt := metav1.NewMicroTime(*acquire)
			l.Spec.AcquireTime = &mt
		}
		if renew != nil {
			mt := metav1.NewMicroTime(*renew)
			l.Spec.RenewTime = &mt
		}
		return l
	}
	at := func(d time.Duration) *time.Time { t := testNow.Add(d); return &t }

	type want struct {
		state                      State
		claimed, expired           bool
		holder                     string
		maint, stale, drift, above bool
		free                       bool
		problem                    string
	}
	tests := []struct {
		name   string
		member string
		objs   []any
		want   want
	}{
		{"free Ready", "desk-1", readyOf(spec, 1), want{state: StateReady, free: true}},
		{"free Starting", "desk-1", []any{podOf(spec, 1, pending), pvcOf(spec, 1)}, want{state: StateStarting, free: true}},
		{"free Stopped", "desk-1", []any{pvcOf(spec, 1)}, want{state: StateStopped, free: true}},
		{"Missing is not free", "desk-1", nil, want{state: StateMissing}},
		{"Failed is not free", "desk-1", []any{podOf(spec, 1, phase(corev1.PodFailed)), pvcOf(spec, 1)}, want{state: StateFailed}},
		{"Unschedulable is not free", "desk-1", []any{podOf(spec, 1, pending, cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, "m")), pvcOf(spec, 1)}, want{state: StateUnschedulable}},
		{"Terminating is not free", "desk-1", []any{podOf(spec, 1, running, ready, deletingPod), pvcOf(spec, 1)}, want{state: StateTerminating}},
		{"claimed", "desk-1", with(readyOf(spec, 1), claimAt("desk", "desk-1", "alice", testNow.Add(-time.Minute))), want{state: StateReady, claimed: true, holder: "alice"}},
		{"claim expired by renewTime", "desk-1", with(readyOf(spec, 1), leaseAt("alice", 3600, at(-3*time.Hour), at(-61*time.Minute))), want{state: StateReady, claimed: true, expired: true, holder: "alice"}},
		{"claim renewed recently", "desk-1", with(readyOf(spec, 1), leaseAt("alice", 3600, at(-3*time.Hour), at(-59*time.Minute))), want{state: StateReady, claimed: true, holder: "alice"}},
		{"claim expires exactly now", "desk-1", with(readyOf(spec, 1), leaseAt("alice", 3600, nil, at(-time.Hour))), want{state: StateReady, claimed: true, expired: true, holder: "alice"}},
		{"claim expired by acquireTime fallback", "desk-1", with(readyOf(spec, 1), leaseAt("alice", 3600, at(-2*time.Hour), nil)), want{state: StateReady, claimed: true, expired: true, holder: "alice"}},
		{"claim fresh by acquireTime fallback", "desk-1", with(readyOf(spec, 1), leaseAt("alice", 3600, at(-30*time.Minute), nil)), want{state: StateReady, claimed: true, holder: "alice"}},
		{"claim of a Missing member", "desk-1", []any{claimAt("desk", "desk-1", "alice", testNow)}, want{state: StateMissing, claimed: true, holder: "alice"}},
		{"maintenance", "desk-1", with(readyOf(spec, 1), ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-9*time.Minute))), want{state: StateReady, maint: true}},
		{"stale maintenance after 10 minutes", "desk-1", with(readyOf(spec, 1), ReconcilerLease(testNS, "desk", "desk-1", testNow.Add(-10*time.Minute))), want{state: StateReady, maint: true, stale: true}},
		{"drift", "desk-1", readyOf(old, 1), want{state: StateReady, drift: true}},
		{"drift on a Stopped member", "desk-1", []any{pvcOf(old, 1)}, want{state: StateStopped, drift: true}},
		{"above size", "desk-3", readyOf(spec, 3), want{state: StateReady, above: true}},
		{"above size and claimed", "desk-3", []any{podOf(spec, 3, running, ready), pvcOf(spec, 3), ClaimLease(testNS, "desk", "desk-3", "bob", testNow)}, want{state: StateReady, above: true, claimed: true, holder: "bob"}},
		{"lease without holder is no claim and no maintenance", "desk-1", with(readyOf(spec, 1), func() *coordinationv1.Lease {
			l := claimAt("desk", "desk-1", "x", testNow)
			l.Spec.HolderIdentity = nil
			return l
		}()), want{state: StateReady, problem: "lease has no holder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Observe(snapOf(cmOf(spec), tt.objs...), testNow)
			m := mustMember(t, v, tt.member)
			got := want{
				state: m.State, claimed: m.Claimed, expired: m.Claim != nil && m.Claim.Expired && m.Claimed, holder: m.Holder(),
				maint: m.InMaintenance(), stale: m.InMaintenance() && m.HoldStale(), drift: m.Drift, above: m.AboveSize, free: m.Free,
			}
			if tt.want.problem != "" {
				if !strings.Contains(strings.Join(m.Problems, "; "), tt.want.problem) {
					t.Fatalf("problems %q, want %q", m.Problems, tt.want.problem)
				}
				got.problem = tt.want.problem
			}
			if got != tt.want {
				t.Fatalf("member %s:\n got %+v\nwant %+v", m.Name, got, tt.want)
			}
			var row *MemberRow
			for i := range v.Status.Members {
				if v.Status.Members[i].Name == tt.member {
					row = &v.Status.Members[i]
				}
			}
			if row == nil || row.Holder != got.holder || row.ClaimExpired != got.expired || row.Maintenance != got.maint || row.Drift != got.drift || row.AboveSize != got.above {
				t.Fatalf("status row %+v disagrees with %+v", row, got)
			}
		})
	}
}

func TestObserveCounts(t *testing.T) {
	spec := baseSpec(6)
	old := spec
	old.Memory = "8Gi"
	objs := []any{
		// desk-1 Ready and free
		podOf(spec, 1, running, ready), pvcOf(spec, 1),
		// desk-2 Ready, claimed
		podOf(spec, 2, running, ready), pvcOf(spec, 2), ClaimLease(testNS, "desk", "desk-2", "alice", testNow),
		// desk-3 Unschedulable
		podOf(spec, 3, pending, cond(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable, "no room")), pvcOf(spec, 3),
		// desk-4 drifted and Ready
		podOf(old, 4, running, ready), pvcOf(old, 4),
		// desk-5 Failed
		podOf(spec, 5, phase(corev1.PodFailed)), pvcOf(spec, 5),
		// desk-6 Missing
		// desk-7 above size, Ready
		podOf(spec, 7, running, ready), pvcOf(spec, 7),
	}
	v := Observe(snapOf(cmOf(spec), objs...), testNow)
	st := v.Status
	got := [9]int{st.Desired, st.Observed, st.Ready, st.Claimed, st.Free, st.Unschedulable, st.Drifted, st.Failed, len(st.Members)}
	want := [9]int{6, 6, 4, 1, 1, 1, 1, 1, 7}
	if got != want {
		t.Fatalf("desired/observed/ready/claimed/free/unschedulable/drifted/failed/rows = %v, want %v", got, want)
	}
	if st.Exhausted || st.Source != spec.SourceHash() {
		t.Fatalf("exhausted %v source %q", st.Exhausted, st.Source)
	}
	var order []string
	for _, r := range st.Members {
		order = append(order, r.Name)
	}
	if strings.Join(order, ",") != "desk-1,desk-2,desk-3,desk-4,desk-5,desk-6,desk-7" {
		t.Fatalf("rows in order %v", order)
	}

	exhausted := []struct {
		name string
		size int
		objs []any
		want bool
	}{
		{"all claimed", 1, []any{podOf(spec, 1, running, ready), pvcOf(spec, 1), ClaimLease(testNS, "desk", "desk-1", "alice", testNow)}, true},
		{"all Missing", 2, nil, true},
		{"one free", 1, []any{podOf(spec, 1, running, ready), pvcOf(spec, 1)}, false},
		{"size zero", 0, nil, false},
	}
	for _, tt := range exhausted {
		t.Run("exhausted "+tt.name, func(t *testing.T) {
			s := spec
			s.Size = tt.size
			if got := Observe(snapOf(cmOf(s), tt.objs...), testNow).Status.Exhausted; got != tt.want {
				t.Fatalf("exhausted = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObserveMalformedLeases(t *testing.T) {
	spec := baseSpec(1)
	lease := func(mod func(*coordinationv1.Lease)) *coordinationv1.Lease {
		l := ClaimLease(testNS, "desk", "desk-1", "alice", testNow.Add(-time.Minute))
		mod(l)
		return l
	}
	i32 := func(v int32) *int32 { return &v }
	tests := []struct {
		name        string
		lease       *coordinationv1.Lease
		problem     string
		wantExpired bool
		wantMaint   bool
	}{
		{"no holder", lease(func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = nil }), "lease has no holder", false, false},
		{"empty holder", lease(func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptrTo("") }), "lease has no holder", false, false},
		{"no duration", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = nil }), "lease has no duration; 1h0m0s assumed", false, false},
		{"zero duration", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = i32(0) }), "lease duration 0s is not positive", false, false},
		{"negative duration", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = i32(-5) }), "lease duration -5s is not positive", false, false},
		{"time in the future", lease(func(l *coordinationv1.Lease) {
			t := metav1.NewMicroTime(testNow.Add(24 * time.Hour))
			l.Spec.RenewTime, l.Spec.AcquireTime = &t, &t
		}), "is in the future", false, false},
		{"no times, creation time used", lease(func(l *coordinationv1.Lease) {
			l.Spec.RenewTime, l.Spec.AcquireTime = nil, nil
			l.CreationTimestamp = metav1.NewTime(testNow.Add(-2 * time.Hour))
		}), "its creation time is used", true, false},
		{"no times at all", lease(func(l *coordinationv1.Lease) { l.Spec.RenewTime, l.Spec.AcquireTime = nil, nil }), "lease has no acquire or renew time", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, c := readyMember("desk", 1, spec)
			v := Observe(snapOf(cmOf(spec), p, c, tt.lease), testNow)
			m := mustMember(t, v, "desk-1")
			if !strings.Contains(strings.Join(m.Problems, "; "), tt.problem) {
				t.Fatalf("problems %q, want %q", m.Problems, tt.problem)
			}
			if c := m.LeaseRead(); c == nil || c.Expired != tt.wantExpired || m.InMaintenance() != tt.wantMaint {
				t.Fatalf("lease read %+v maintenance %v, want expired %v maintenance %v", c, m.InMaintenance(), tt.wantExpired, tt.wantMaint)
			}
			if m.Free {
				t.Fatal("a member with a Lease is free")
			}
		})
	}
}

func TestObserveOddObjects(t *testing.T) {
	spec := baseSpec(2)
	stray := podOf(spec, 1, running, ready)
	stray.Name = "desk-scratch"
	delete(stray.Labels, LabelMember)
	otherLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller", Labels: PoolLabels("desk")}}
	zero := pvcOf(spec, 1)
	zero.Name, zero.Labels[LabelMember] = "desk-0-data", "desk-0"

	v := Observe(snapOf(cmOf(spec), stray, otherLease, zero, (*corev1.Pod)(nil), (*corev1.PersistentVolumeClaim)(nil), (*coordinationv1.Lease)(nil)), testNow)
	for _, name := range []string{"desk-scratch", "desk-0"} {
		m := mustMember(t, v, name)
		if m.Index != 0 || m.Free || m.AboveSize {
			t.Errorf("%s: index %d free %v above %v", name, m.Index, m.Free, m.AboveSize)
		}
		if !strings.Contains(strings.Join(m.Problems, ";"), "name does not fit desk-<n>") {
			t.Errorf("%s: problems %q", name, m.Problems)
		}
	}
	if v.Member("kube-controller") != nil {
		t.Error("a Lease that is not a member claim became a member")
	}
	var names []string
	for _, m := range v.Members {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, ","); got != "desk-1,desk-2,desk-0,desk-scratch" {
		t.Fatalf("members %s, want the odd names last", got)
	}
}

func TestObserveDefinitionProblems(t *testing.T) {
	spec := baseSpec(2)
	p, c := readyMember("desk", 1, spec)
	tests := []struct {
		name                string
		cm                  *corev1.ConfigMap
		wantDefined         bool
		wantSpecErr         bool
		wantRecordedErr     bool
		wantDesired         int
		wantImage           string
		wantProblem         string
		wantAboveSize, free bool
	}{
		{"no ConfigMap", nil, false, false, false, 0, "", "no pool definition: ConfigMap corral-vdi-ctpool-desk does not exist", true, false},
		{"bad quantity keeps the size", cmRaw("image: img\nsize: 4\ncpu: lots\n", ""), true, true, false, 4, "img", `spec: invalid cpu "lots"`, false, false},
		{"unknown field keeps the size", cmRaw("image: img\nsize: 3\nreplicas: 9\n", ""), true, true, false, 3, "img", `unknown field "replicas"`, false, false},
		{"persistent keeps the size", cmRaw("image: img\nsize: 2\nmode: persistent\n", ""), true, true, false, 2, "img", "mode persistent is not supported", false, false},
		{"malformed YAML", cmRaw("image: [\n", ""), true, true, false, 0, "", "spec: invalid spec", true, false},
		{"negative size", cmRaw("image: img\nsize: -3\n", ""), true, true, false, 0, "img", "must not be negative", true, false},
		{"malformed status", func() *corev1.ConfigMap { cm := cmOf(spec); cm.Data[KeyStatus] = "desired: [\n"; return cm }(), true, false, true, 2, spec.Image, "status: invalid status", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Observe(snapOf(tt.cm, p, c), testNow)
			if v.Defined != tt.wantDefined || (v.SpecError != nil) != tt.wantSpecErr || (v.RecordedError != nil) != tt.wantRecordedErr {
				t.Fatalf("defined %v specErr %v recordedErr %v", v.Defined, v.SpecError, v.RecordedError)
			}
			if v.Status.Desired != tt.wantDesired || v.Spec.Image != tt.wantImage {
				t.Fatalf("desired %d image %q, want %d %q", v.Status.Desired, v.Spec.Image, tt.wantDesired, tt.wantImage)
			}
			if !strings.Contains(strings.Join(v.Problems, "; "), tt.wantProblem) {
				t.Fatalf("problems %q, want %q", v.Problems, tt.wantProblem)
			}
			m := mustMember(t, v, "desk-1")
			if m.AboveSize != tt.wantAboveSize || m.Free != tt.free || m.Drift {
				t.Fatalf("desk-1 above %v free %v drift %v", m.AboveSize, m.Free, m.Drift)
			}
			if len(v.Members) < tt.wantDesired {
				t.Fatalf("%d members for desired %d", len(v.Members), tt.wantDesired)
			}
		})
	}
}

func TestObserveReadsRecordedStatus(t *testing.T) {
	spec := baseSpec(1)
	cm := cmOf(spec)
	cm.Data[KeyStatus] = "desired: 1\nready: 1\nerrors:\n- 'create desk-1: boom'\n"
	v := Observe(snapOf(cm), testNow)
	if v.Recorded.Desired != 1 || v.Recorded.Ready != 1 || !reflect.DeepEqual(v.Recorded.Errors, []string{"create desk-1: boom"}) {
		t.Fatalf("recorded %+v", v.Recorded)
	}
	if v.Status.Ready != 0 || v.Status.Errors != nil {
		t.Fatalf("derived status copied the recorded one: %+v", v.Status)
	}
	if !v.ObservedAt.Equal(testNow) {
		t.Fatalf("observedAt %v", v.ObservedAt)
	}
}

func TestObserveDoesNotModifyTheSnapshot(t *testing.T) {
	spec := baseSpec(3)
	p, c := readyMember("desk", 1, spec)
	snap := snapOf(cmOf(spec), p, c, ClaimLease(testNS, "desk", "desk-1", "alice", testNow.Add(-2*time.Hour)), podOf(spec, 5))
	before := fmt.Sprintf("%#v", snap)
	b0, b1, b2 := snap.Pods[0].DeepCopy(), snap.PVCs[0].DeepCopy(), snap.Leases[0].DeepCopy()
	_ = Observe(snap, testNow)
	if fmt.Sprintf("%#v", snap) != before || !reflect.DeepEqual(b0, snap.Pods[0]) || !reflect.DeepEqual(b1, snap.PVCs[0]) || !reflect.DeepEqual(b2, snap.Leases[0]) {
		t.Fatal("Observe modified its input")
	}
}

func TestGroupByPool(t *testing.T) {
	spec := baseSpec(1)
	cm := func(pool string) *corev1.ConfigMap { return BuildConfigMap(testNS, pool, spec) }
	pod := func(pool string, n int) *corev1.Pod { return BuildPod(testNS, pool, n, spec) }
	pvc := func(pool string, n int) *corev1.PersistentVolumeClaim { return BuildPVC(testNS, pool, n, spec) }
	lease := func(pool string, n int) *coordinationv1.Lease {
		return ClaimLease(testNS, pool, MemberName(pool, n), "a", testNow)
	}
	mislabelled := cm("lab")
	mislabelled.Labels[LabelPool] = "other"
	unlabelled := pod("zed", 1)
	unlabelled.Labels = nil
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}}

	snaps := GroupByPool(testNS,
		[]*corev1.ConfigMap{cm("desk"), cm("art"), mislabelled, foreign},
		[]*corev1.Pod{pod("desk", 1), pod("desk", 2), pod("art", 1), pod("orphan", 1), unlabelled},
		[]*corev1.PersistentVolumeClaim{pvc("desk", 1), pvc("orphan", 1)},
		[]*coordinationv1.Lease{lease("desk", 1), lease("art", 1)},
	)
	type got struct {
		pool               string
		defined            bool
		pods, pvcs, leases int
	}
	var gs []got
	for _, s := range snaps {
		gs = append(gs, got{s.Pool, s.ConfigMap != nil, len(s.Pods), len(s.PVCs), len(s.Leases)})
		if s.Namespace != testNS {
			t.Errorf("%s: namespace %q", s.Pool, s.Namespace)
		}
	}
	// The mislabelled ConfigMap defines neither lab nor other; the unlabelled
	// Pod and the foreign ConfigMap belong to no pool.
	want := []got{{"art", true, 1, 0, 1}, {"desk", true, 2, 1, 1}, {"orphan", false, 1, 1, 0}}
	if !reflect.DeepEqual(gs, want) {
		t.Fatalf("GroupByPool = %+v\nwant %+v", gs, want)
	}

	views := ObserveAll(snaps, testNow)
	if len(views) != 3 || views[2].Defined || !views[1].Defined || views[1].Status.Desired != 1 {
		t.Fatalf("ObserveAll = %d views", len(views))
	}
	if m := views[2].Member("orphan-1"); m == nil || !m.AboveSize {
		t.Fatalf("a member of a pool without definition should be above size 0: %+v", m)
	}
}
