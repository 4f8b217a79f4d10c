package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestApplyChecksPodSecurity: apply refuses, writing nothing, a pool whose
// Pods the namespace's enforced Pod Security level would refuse, and goes
// on with a warning when the namespace cannot be read.
func TestApplyChecksPodSecurity(t *testing.T) {
	spec := func(level string) Spec {
		s := Spec{Image: "img:1", Size: 1, PodSecurity: level}
		return s
	}
	tests := []struct {
		name     string
		labels   map[string]string
		nsErr    error
		spec     Spec
		wantErr  string // "" = applied
		wantWarn string
	}{
		{name: "no label admits privileged", spec: spec(PodSecurityPrivileged)},
		{name: "privileged admits privileged", labels: map[string]string{LabelPodSecurityEnforce: "privileged"}, spec: spec(PodSecurityPrivileged)},
		{name: "baseline admits baseline", labels: map[string]string{LabelPodSecurityEnforce: "baseline"}, spec: spec("")},
		{name: "baseline admits restricted", labels: map[string]string{LabelPodSecurityEnforce: "baseline"}, spec: spec(PodSecurityRestricted)},
		{name: "restricted admits restricted", labels: map[string]string{LabelPodSecurityEnforce: "restricted"}, spec: spec(PodSecurityRestricted)},
		{name: "baseline refuses privileged", labels: map[string]string{LabelPodSecurityEnforce: "baseline"}, spec: Spec{Image: "img:1", Size: 1, Privileged: true},
			wantErr: "pool desk: namespace vdi enforces baseline (label pod-security.kubernetes.io/enforce); a privileged pool needs privileged: " +
				"Pod Security admission would refuse the member Pods; nothing was written (relabel the namespace, or change podSecurity)"},
		{name: "restricted refuses baseline", labels: map[string]string{LabelPodSecurityEnforce: "restricted"}, spec: spec(""),
			wantErr: "namespace vdi enforces restricted (label pod-security.kubernetes.io/enforce); a baseline pool needs baseline or privileged"},
		{name: "restricted refuses privileged", labels: map[string]string{LabelPodSecurityEnforce: "restricted"}, spec: spec(PodSecurityPrivileged),
			wantErr: "a privileged pool needs privileged"},
		{name: "a value that is no level is restricted", labels: map[string]string{LabelPodSecurityEnforce: "strict"}, spec: spec(""),
			wantErr: `enforces restricted (label pod-security.kubernetes.io/enforce) (its value "strict" is no level, which admission reads as restricted); a baseline pool`},
		{name: "other labels do not count", labels: map[string]string{"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"}, spec: spec(PodSecurityPrivileged)},
		{name: "forbidden is a warning", nsErr: fmt.Errorf("namespaces %q is forbidden: %w", testNS, ErrForbidden), spec: spec(PodSecurityPrivileged),
			wantWarn: "the Pod Security level namespace vdi enforces is unknown (no permission to get namespaces): the API server decides when it creates the members"},
		{name: "not found is a warning", nsErr: fmt.Errorf("namespaces %q: %w", testNS, ErrNotFound), spec: spec(""),
			wantWarn: "enforces is unknown (not found)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, f := newEngine()
			f.nsLabels, f.nsErr = tt.labels, tt.nsErr
			res, err := e.Apply(context.Background(), "desk", tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrPodSecurityRefused) {
					t.Fatalf("Apply error = %v, want ErrPodSecurityRefused containing %q", err, tt.wantErr)
				}
				if w := f.writes(); len(w) != 0 || res.Changed {
					t.Fatalf("a refused apply wrote %v (changed %v)", w, res.Changed)
				}
				return
			}
			if err != nil || !res.Created {
				t.Fatalf("Apply = %+v, %v", res, err)
			}
			joined := strings.Join(res.Warnings, "\n")
			if tt.wantWarn == "" && joined != "" || !strings.Contains(joined, tt.wantWarn) {
				t.Fatalf("warnings %q, want %q", joined, tt.wantWarn)
			}
		})
	}
}

// TestApplyEditPodSecurityOfAnExistingPool: an edit that makes an existing
// pool privileged in a baseline namespace leaves the stored definition as
// it was.
func TestApplyEditPodSecurityOfAnExistingPool(t *testing.T) {
	e, f := newEngine()
	seedPool(f, "desk", baseSpec(1), 1)
	f.nsLabels = map[string]string{LabelPodSecurityEnforce: PodSecurityBaseline}
	before := f.cm(ConfigMapName("desk")).Data[KeySpec]
	_, err := e.ApplyEdit(context.Background(), "desk", func(s *Spec) (Spec, error) {
		n := *s
		n.Privileged, n.PodSecurity = true, PodSecurityPrivileged
		return n, nil
	}, false)
	if !errors.Is(err, ErrPodSecurityRefused) {
		t.Fatalf("ApplyEdit = %v, want ErrPodSecurityRefused", err)
	}
	if f.cm(ConfigMapName("desk")).Data[KeySpec] != before || len(f.writes()) != 0 {
		t.Fatalf("the refused edit wrote %v", f.writes())
	}
}

// podSecurityForbidden is the API server's answer to a Pod create that the
// namespace's Pod Security admission refuses, as kube maps it.
func podSecurityForbidden(pod string) error {
	return fmt.Errorf(`pods %q is forbidden: violates PodSecurity "baseline:latest": privileged (container "desktop" must not set securityContext.privileged=true): %w`, pod, ErrForbidden)
}

// TestReconcileRecordsPodSecurityRefusal: when the namespace was relabelled
// after apply, the member creates are refused by admission; the reconcile
// result and the recorded status carry the API server's words, and the
// diagnosis of each member, read from the recorded status, explains it.
func TestReconcileRecordsPodSecurityRefusal(t *testing.T) {
	e, f := newEngine()
	priv := Spec{Image: "img:1", Size: 2, Privileged: true}
	priv.Default()
	f.add(BuildConfigMap(testNS, "desk", priv))
	for _, m := range []string{"desk-1", "desk-2"} {
		f.fail("create", kPod, m, podSecurityForbidden(m), 0)
	}
	res, err := e.Reconcile(context.Background(), "desk")
	var se *StepError
	if !errors.As(err, &se) || len(res.Errors) != 2 {
		t.Fatalf("Reconcile = %v, errors %q; want both creates failed", err, res.Errors)
	}
	for _, msg := range res.Errors {
		if !strings.Contains(msg, `violates PodSecurity "baseline:latest": privileged (container "desktop" must not set securityContext.privileged=true)`) {
			t.Fatalf("reconcile error %q lacks the API server's message", msg)
		}
	}
	st, perr := ParseStatus(f.cm(ConfigMapName("desk")).Data[KeyStatus])
	if perr != nil || len(st.Errors) == 0 {
		t.Fatalf("recorded status %+v, %v", st, perr)
	}
	if !strings.Contains(strings.Join(st.Errors, "\n"), `violates PodSecurity "baseline:latest"`) {
		t.Fatalf("recorded errors %q lack the API server's message", st.Errors)
	}
	snap, _ := f.Snapshot(context.Background(), "desk")
	v := Observe(snap, testNow)
	for _, name := range []string{"desk-1", "desk-2"} {
		d := Diagnose(v.Member(name), nil, nil, st.Errors)
		if d.Reason != "create refused by Pod Security admission" || !strings.Contains(d.Evidence, "violates PodSecurity") ||
			!strings.Contains(d.Fix, "relabel the namespace") || !strings.Contains(d.Fix, "enforces baseline:latest") {
			t.Errorf("%s: diagnosis %+v", name, d)
		}
	}
}

// TestPodSecurityFixKeepsOddLevelsOut: a level that is not plain words is
// not copied into the fix (the evidence keeps the message whole).
func TestPodSecurityFixKeepsOddLevelsOut(t *testing.T) {
	d := Diagnose(&Member{Name: "desk-1", State: StateMissing}, nil, nil,
		[]string{"create desk-1: create Pod: violates PodSecurity \"\x1b[31mred\": x"})
	if strings.Contains(d.Fix, "\x1b") || !strings.Contains(d.Fix, "enforces a level,") {
		t.Fatalf("fix %q", d.Fix)
	}
}
