//go:build integration

package systest_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctpool-tui/ctpool-tui/engine"
	"github.com/ctpool-tui/ctpool-tui/internal/kubetest"
	"github.com/ctpool-tui/ctpool-tui/internal/pooltest"
)

// wantRootMounts is the persistent root of a privileged member as
// DECISIONS.md states it: each of these PVC sub-directories over its own path.
func wantRootMounts() []corev1.VolumeMount {
	var m []corev1.VolumeMount
	for _, d := range []string{"usr", "var", "bin", "boot", "data", "etc", "home", "lib", "lib32", "lib64", "libx32",
		"media", "mnt", "opt", "root", "sbin", "srv"} {
		m = append(m, corev1.VolumeMount{Name: engine.DataVolume, MountPath: "/" + d, SubPath: d})
	}
	return m
}

// A privileged member's Pod, as the API server stores it, mounts the PVC's
// root directories on the one container that console sessions exec into, and
// a stop and start mounts the same PVC again. These members run on kwok, so
// the evidence here is the stored Pod and the exec request; what a session
// sees inside the container is proven on the real node
// (cmd/ctpool-tui TestIntegrationRealNodePrivilegedKeepsRoot).
func TestIntegrationPrivilegedRootMounts(t *testing.T) {
	env := kubetest.Require(t)
	eng := pooltest.Engine(env)
	tests := []struct {
		pool        string
		init        bool
		wantCommand []string
	}{
		{pool: "root", wantCommand: []string{"sleep", "infinity"}},
		{pool: "rootinit", init: true}, // the image's own entrypoint
	}
	for _, tt := range tests {
		t.Run(tt.pool, func(t *testing.T) {
			spec := pooltest.SmallSpec(pooltest.Image, 1)
			spec.Privileged, spec.Init = true, tt.init
			applyReady(t, env, eng, tt.pool, spec)
			member := engine.MemberName(tt.pool, 1)
			pods := env.Client.CoreV1().Pods(env.Namespace)
			pod, err := pods.Get(context.Background(), member, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkPrivilegedPod(t, pod, tt.wantCommand)

			// A console session: the exec request names a container; it must
			// be the one with the root mounts.
			rec := &execRecorder{}
			err = execAs(t, env, "admin", rec, member, nil)
			t.Logf("admin exec: %v (statuses %v)", err, rec.statuses)
			if len(rec.urls) != 1 {
				t.Fatalf("executor built %d times, want 1", len(rec.urls))
			}
			target := rec.urls[0].Query().Get("container")
			var execIn *corev1.Container
			for i := range pod.Spec.Containers {
				if pod.Spec.Containers[i].Name == target {
					execIn = &pod.Spec.Containers[i]
				}
			}
			if execIn == nil {
				t.Fatalf("the console execs into container %q, which the Pod does not have", target)
			}
			if !reflect.DeepEqual(execIn.VolumeMounts, wantRootMounts()) {
				t.Errorf("the console's container %q mounts %+v, want the persistent root", target, execIn.VolumeMounts)
			}
			// With no kubelet listening, the API server's own error names the
			// kubelet URL it forwarded the session to: pod, then container.
			if err != nil {
				if _, after, ok := strings.Cut(err.Error(), "/exec/"+env.Namespace+"/"+member+"/"); ok {
					if c, _, _ := strings.Cut(after, "?"); c != target {
						t.Errorf("the API server forwarded the session to container %q, want %q", c, target)
					}
				}
			}

			// Stop (the Pod goes, the PVC stays) and start: the new Pod mounts
			// the same PVC the same way.
			pvc, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(context.Background(), engine.PVCName(member), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := pods.Delete(context.Background(), member, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			env.WaitFor(t, 60*time.Second, "the stopped Pod to be gone", func() (bool, error) {
				_, err := pods.Get(context.Background(), member, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, nil
				}
				return false, err
			})
			if _, err := eng.Reconcile(context.Background(), tt.pool); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			waitReady(t, env, eng, tt.pool, 1)
			again, err := pods.Get(context.Background(), member, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if again.UID == pod.UID {
				t.Fatalf("the Pod was not replaced")
			}
			checkPrivilegedPod(t, again, tt.wantCommand)
			pvcAgain, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(context.Background(), engine.PVCName(member), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pvcAgain.UID != pvc.UID {
				t.Errorf("the start made a new PVC (%s, was %s): the root would be copied afresh", pvcAgain.UID, pvc.UID)
			}
		})
	}
}

func checkPrivilegedPod(t *testing.T, pod *corev1.Pod, wantCommand []string) {
	t.Helper()
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want the desktop alone", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if c.Name != engine.ContainerName || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("container %q security context %+v, want the privileged desktop", c.Name, c.SecurityContext)
	}
	if !reflect.DeepEqual(c.VolumeMounts, wantRootMounts()) {
		t.Errorf("desktop mounts %+v, want %+v", c.VolumeMounts, wantRootMounts())
	}
	if !reflect.DeepEqual(c.Command, wantCommand) || c.Args != nil {
		t.Errorf("command %q args %q, want command %q and no args", c.Command, c.Args, wantCommand)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Name != engine.DataVolume || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != engine.PVCName(pod.Name) {
		t.Errorf("volumes %+v, want the member's PVC alone", pod.Spec.Volumes)
	}
	if len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("%d init containers, want the copy", len(pod.Spec.InitContainers))
	}
	ic := pod.Spec.InitContainers[0]
	if ic.Image != c.Image || !reflect.DeepEqual(ic.VolumeMounts, []corev1.VolumeMount{{Name: engine.DataVolume, MountPath: "/ctpool-root"}}) {
		t.Errorf("init container image %s mounts %+v, want %s with the PVC at /ctpool-root", ic.Image, ic.VolumeMounts, c.Image)
	}
	if script := strings.Join(ic.Command, " "); !strings.Contains(script, "cp -a") || !strings.Contains(script, ".ctpool-root-v2") {
		t.Errorf("init container command %q is not the marker-guarded copy", script)
	}
	if s := pod.Status.InitContainerStatuses; len(s) != 1 || s[0].State.Terminated == nil || s[0].State.Terminated.ExitCode != 0 {
		t.Errorf("init container status %+v, want completed", s)
	}
}
