package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stage is where a Pod is in its life on a node.
type stage int

const (
	stagePending          stage = iota // not on a node yet
	stageCreating                      // on a node; sandbox and containers being created
	stagePulling                       // pulling the image
	stageStarted                       // container running, not ready yet
	stageReady                         // Ready=True
	stageErrImagePull                  // the pull failed
	stageImagePullBackOff              // the kubelet backs off pulling
	stageCrashLoop                     // the container keeps exiting
)

// pullFault is a pull failure armed for the next image pull.
type pullFault int

const (
	pullOK pullFault = iota
	pullNotFound
	pullHostile // the registry's error text carries terminal escapes
)

// podSim is the scheduler's and kubelet's memory of one Pod.
type podSim struct {
	namespace    string
	name         string
	uid          types.UID
	schedAt      time.Time // first scheduling attempt
	schedMsg     string    // last FailedScheduling message
	schedEventAt time.Time // when an unchanged failure is announced again

	node       string
	stage      stage
	next       time.Time // when the kubelet acts next
	startTime  time.Time
	startedAt  time.Time
	ip         string
	container  string // container ID
	pullStart  time.Time
	pullFault  pullFault
	pullErr    string
	crashNext  bool // the container exits right after it starts
	crashMsg   string
	restarts   int32
	finishedAt time.Time
}

// Kubelet timing at Speed 1.
const (
	sandboxDelayMin = 200 * time.Millisecond // pod sandbox and volume mount
	sandboxDelayMax = 700 * time.Millisecond
	pullMin         = 1200 * time.Millisecond
	pullMax         = 3500 * time.Millisecond
	readyMin        = 500 * time.Millisecond // readiness after the container starts
	readyMax        = 1800 * time.Millisecond
	warmClaimMin    = 150 * time.Millisecond // vk-sandbox hands over a pre-booted microVM
	warmClaimMax    = 500 * time.Millisecond
	vmBootMin       = 1500 * time.Millisecond // vk-cocoon boots a microVM
	vmBootMax       = 4000 * time.Millisecond
	backOffRepeat   = 20 * time.Second
)

// podState returns the memory of a Pod, making it on first sight.
func (s *Sim) podState(p *corev1.Pod) *podSim {
	ps := s.pods[p.UID]
	if ps == nil {
		ps = &podSim{namespace: p.Namespace, name: p.Name, uid: p.UID, schedAt: s.after(schedLatencyMin, schedLatencyMax)}
		s.pods[p.UID] = ps
	}
	return ps
}

// forget drops the memory of deleted Pods (the kubelet reports Killing for
// the ones it ran) and of deleted claims.
func (s *Sim) forget(ctx context.Context, pods []corev1.Pod, pvcs []corev1.PersistentVolumeClaim) {
	live := map[types.UID]bool{}
	for i := range pods {
		live[pods[i].UID] = true
	}
	var gone []*podSim
	for uid, ps := range s.pods {
		if !live[uid] {
			gone = append(gone, ps)
			delete(s.pods, uid)
		}
	}
	sortPodSims(gone)
	for _, ps := range gone {
		ni := s.nodes[ps.node]
		if ni == nil || ps.stage < stageStarted {
			continue
		}
		ref := objRef{namespace: ps.namespace, kind: "Pod", apiVersion: "v1", name: ps.name, uid: ps.uid, fieldPath: "spec.containers{desktop}"}
		s.record(ctx, ref, corev1.EventTypeNormal, "Killing", "Stopping container desktop", ni.component, ps.node)
	}
	livePVC := map[types.UID]bool{}
	for i := range pvcs {
		livePVC[pvcs[i].UID] = true
	}
	for uid := range s.pvcs {
		if !livePVC[uid] {
			delete(s.pvcs, uid)
		}
	}
}

// kubeletEvent is an Event a kubelet emits once its status write succeeded.
type kubeletEvent struct {
	container     bool
	typ, reason   string
	message       string
	containerName string
}

// runKubelets moves each Pod on a node one step further when its time has come.
func (s *Sim) runKubelets(ctx context.Context, pods []corev1.Pod) {
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ni := s.nodes[p.Spec.NodeName]
		if ni == nil {
			continue // nothing runs Pods on an unknown node
		}
		ps := s.podState(p)
		if ps.stage == stagePending {
			s.admitToNode(ctx, p, ps, ni)
			continue
		}
		if !s.due(ps.next) {
			continue
		}
		switch ps.stage {
		case stageCreating:
			s.createContainers(ctx, p, ps, ni)
		case stagePulling:
			s.finishPull(ctx, p, ps, ni)
		case stageErrImagePull:
			nx := *ps
			nx.stage, nx.next = stageImagePullBackOff, s.after(backOffRepeat, backOffRepeat+5*time.Second)
			s.advance(ctx, p, ps, ni, nx,
				kubeletEvent{container: true, typ: corev1.EventTypeNormal, reason: "BackOff", message: fmt.Sprintf("Back-off pulling image %q", image(p))},
				kubeletEvent{container: true, typ: corev1.EventTypeWarning, reason: "Failed", message: "Error: ImagePullBackOff"})
		case stageImagePullBackOff:
			ps.next = s.after(backOffRepeat, backOffRepeat+5*time.Second)
			s.kubeletRecord(ctx, p, ni, kubeletEvent{container: true, typ: corev1.EventTypeNormal, reason: "BackOff", message: fmt.Sprintf("Back-off pulling image %q", image(p))})
		case stageStarted:
			nx := *ps
			if nx.crashNext {
				s.crash(ctx, p, ps, ni)
				continue
			}
			nx.stage = stageReady
			s.advance(ctx, p, ps, ni, nx)
		case stageCrashLoop:
			nx := *ps
			nx.restarts++
			nx.finishedAt = s.now
			nx.next = s.after(backOffRepeat, backOffRepeat+10*time.Second)
			s.advance(ctx, p, ps, ni, nx, crashEvent(p))
		}
	}
}

// admitToNode is the kubelet seeing a Pod bound to its node.
func (s *Sim) admitToNode(ctx context.Context, p *corev1.Pod, ps *podSim, ni *nodeInfo) {
	nx := *ps
	nx.node = p.Spec.NodeName
	nx.stage = stageCreating
	nx.startTime = s.now
	switch ni.flavour {
	case flavourSandbox:
		nx.next = s.after(warmClaimMin, warmClaimMax)
	case flavourCocoon:
		nx.next = s.after(vmBootMin, vmBootMax)
	default:
		nx.next = s.after(sandboxDelayMin, sandboxDelayMax)
	}
	nx.ip = fmt.Sprintf("%s.%d", ni.podCIDR, ni.nextIP)
	ni.nextIP++
	if ni.nextIP > 254 {
		ni.nextIP = 2
	}
	s.advance(ctx, p, ps, ni, nx)
}

// createContainers starts the containers, pulling the image first when the
// node does not have it (or the pull policy says so).
func (s *Sim) createContainers(ctx context.Context, p *corev1.Pod, ps *podSim, ni *nodeInfo) {
	img := image(p)
	nx := *ps
	if ni.flavour == flavourKubelet && (!ni.images[img] || pullPolicy(p) == corev1.PullAlways) {
		nx.stage = stagePulling
		nx.pullStart = s.now
		nx.next = s.after(pullMin, pullMax)
		if s.pullFault != pullOK {
			nx.pullFault = s.pullFault
			nx.pullErr = pullError(img, nx.pullFault)
		}
		s.advance(ctx, p, ps, ni, nx, kubeletEvent{container: true, typ: corev1.EventTypeNormal, reason: "Pulling", message: fmt.Sprintf("Pulling image %q", img)})
		if ps.stage == stagePulling && ps.pullFault != pullOK {
			s.pullFault = pullOK // this pull takes the armed failure
		}
		return
	}
	var evs []kubeletEvent
	if ni.flavour == flavourKubelet {
		evs = append(evs, kubeletEvent{container: true, typ: corev1.EventTypeNormal, reason: "Pulled", message: fmt.Sprintf("Container image %q already present on machine", img)})
	}
	s.start(ctx, p, ps, ni, nx, evs...)
}

// finishPull ends a pull: the image is there, or the pull failed.
func (s *Sim) finishPull(ctx context.Context, p *corev1.Pod, ps *podSim, ni *nodeInfo) {
	img := image(p)
	nx := *ps
	if nx.pullFault != pullOK {
		nx.stage = stageErrImagePull
		nx.next = s.after(time.Second, 2*time.Second)
		s.advance(ctx, p, ps, ni, nx,
			kubeletEvent{container: true, typ: corev1.EventTypeWarning, reason: "Failed", message: fmt.Sprintf("Failed to pull image %q: %s", img, nx.pullErr)},
			kubeletEvent{container: true, typ: corev1.EventTypeWarning, reason: "Failed", message: "Error: ErrImagePull"})
		return
	}
	took := s.now.Sub(ps.pullStart).Seconds()
	size := 300_000_000 + s.rng.Int64N(600_000_000)
	ni.images[img] = true
	s.start(ctx, p, ps, ni, nx, kubeletEvent{container: true, typ: corev1.EventTypeNormal, reason: "Pulled",
		message: fmt.Sprintf("Successfully pulled image %q in %.3fs (%.3fs including waiting). Image size: %d bytes.", img, took, took, size)})
}

// start runs the containers; readiness follows after a short delay.
func (s *Sim) start(ctx context.Context, p *corev1.Pod, ps *podSim, ni *nodeInfo, nx podSim, evs ...kubeletEvent) {
	nx.stage = stageStarted
	nx.startedAt = s.now
	nx.next = s.after(readyMin, readyMax)
	nx.container = ni.runtimePrefix() + s.hex(64)
	for _, c := range p.Spec.Containers {
		evs = append(evs,
			kubeletEvent{container: true, containerName: c.Name, typ: corev1.EventTypeNormal, reason: "Created", message: "Created container: " + c.Name},
			kubeletEvent{container: true, containerName: c.Name, typ: corev1.EventTypeNormal, reason: "Started", message: "Started container " + c.Name})
	}
	s.advance(ctx, p, ps, ni, nx, evs...)
}

// crash makes the container exit; the kubelet backs off restarting it.
func (s *Sim) crash(ctx context.Context, p *corev1.Pod, ps *podSim, ni *nodeInfo) {
	nx := *ps
	nx.stage = stageCrashLoop
	nx.crashNext = false
	nx.restarts++
	nx.finishedAt = s.now
	nx.next = s.after(backOffRepeat, backOffRepeat+10*time.Second)
	s.advance(ctx, p, ps, ni, nx, crashEvent(p))
}

func crashEvent(p *corev1.Pod) kubeletEvent {
	c := containerName(p)
	return kubeletEvent{container: true, typ: corev1.EventTypeWarning, reason: "BackOff",
		message: fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", c, p.Name, p.Namespace, p.UID)}
}

// advance writes the Pod status of the next state and, once written, keeps
// the state and emits the Events. A lost race leaves everything for the next step.
func (s *Sim) advance(ctx context.Context, p *corev1.Pod, ps *podSim, ni *nodeInfo, nx podSim, evs ...kubeletEvent) {
	u := p.DeepCopy()
	u.Status = s.podStatus(p, &nx)
	var err error
	if ni.flavour == flavourSandbox && nx.stage.created() && u.Annotations["sandbox.cocoonstack.io/claim-id"] == "" {
		// vk-sandbox writes back the claim backing the Pod.
		if u.Annotations == nil {
			u.Annotations = map[string]string{}
		}
		u.Annotations["sandbox.cocoonstack.io/claim-id"] = "clm-" + s.hex(12)
		_, err = s.client.CoreV1().Pods(p.Namespace).Update(ctx, u, metav1.UpdateOptions{})
	} else {
		_, err = s.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		s.note("update status of "+p.Name, err)
		return
	}
	*ps = nx
	for _, e := range evs {
		s.kubeletRecord(ctx, p, ni, e)
	}
}

func (s *Sim) kubeletRecord(ctx context.Context, p *corev1.Pod, ni *nodeInfo, e kubeletEvent) {
	ref := podRef(p)
	if e.container {
		name := e.containerName
		if name == "" {
			name = containerName(p)
		}
		ref = containerRef(p, name)
	}
	s.record(ctx, ref, e.typ, e.reason, e.message, ni.component, p.Spec.NodeName)
}

// podStatus is the status a kubelet reports for a Pod in state ps.
func (s *Sim) podStatus(p *corev1.Pod, ps *podSim) corev1.PodStatus {
	st := *p.Status.DeepCopy()
	node := s.nodes[ps.node]
	st.HostIP = nodeAddress(node)
	st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	t := metav1.NewTime(ps.startTime)
	st.StartTime = &t
	if ps.stage.created() {
		st.Phase = corev1.PodRunning
	} else {
		st.Phase = corev1.PodPending
	}
	if ps.stage >= stagePulling || (ps.stage == stageCreating && node != nil && node.flavour != flavourKubelet) {
		st.PodIP = ps.ip
		st.PodIPs = []corev1.PodIP{{IP: ps.ip}}
	}
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg}
		if ok {
			c = corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
		}
		setPodCondition(&st, c, s.now)
	}
	ready := ps.stage == stageReady
	names := make([]string, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	unready := fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
	cond(corev1.PodReadyToStartContainers, st.PodIP != "", "", "")
	cond(corev1.PodInitialized, len(p.Spec.InitContainers) == 0 || ps.stage.created(), "ContainersNotInitialized",
		"containers with incomplete status: [rootfs]")
	if ready {
		cond(corev1.ContainersReady, true, "", "")
		cond(corev1.PodReady, true, "", "")
	} else {
		cond(corev1.ContainersReady, false, "ContainersNotReady", unready)
		cond(corev1.PodReady, false, "ContainersNotReady", unready)
	}
	cond(corev1.PodScheduled, true, "", "")

	st.InitContainerStatuses = nil
	for _, c := range p.Spec.InitContainers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
		if ps.stage.created() {
			cs.ImageID = imageID(c.Image)
			cs.ContainerID = ps.container
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
				StartedAt: metav1.NewTime(ps.startedAt), FinishedAt: metav1.NewTime(ps.startedAt), ContainerID: ps.container}
		} else {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	st.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		no, yes := false, true
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: ps.restarts, Started: &no}
		switch ps.stage {
		case stageCreating, stagePulling:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		case stageErrImagePull:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: ps.pullErr}
		case stageImagePullBackOff:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", c.Image, ps.pullErr)}
		case stageStarted, stageReady:
			cs.ImageID = imageID(c.Image)
			cs.ContainerID = ps.container
			cs.Started = &yes
			cs.Ready = ready
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(ps.startedAt)}
		case stageCrashLoop:
			cs.ImageID = imageID(c.Image)
			cs.ContainerID = ps.container
			backoff := min(10*time.Second<<max(min(ps.restarts-1, 5), 0), 5*time.Minute)
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, c.Name, p.Name, p.Namespace, p.UID)}
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", Message: ps.crashMsg, ContainerID: ps.container,
				StartedAt: metav1.NewTime(ps.startedAt), FinishedAt: metav1.NewTime(ps.finishedAt),
			}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	return st
}

func (ni *nodeInfo) runtimePrefix() string {
	switch ni.flavour {
	case flavourSandbox:
		return "sandboxd://"
	case flavourCocoon:
		return "cocoon://"
	}
	return "containerd://"
}

func nodeAddress(ni *nodeInfo) string {
	if ni == nil {
		return ""
	}
	return ni.address
}

// hex returns n random hex digits.
func (s *Sim) hex(n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		fmt.Fprintf(&sb, "%016x", s.rng.Uint64())
	}
	return sb.String()[:n]
}

// image is the image of the Pod's first container.
func image(p *corev1.Pod) string {
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	return p.Spec.Containers[0].Image
}

func containerName(p *corev1.Pod) string {
	if len(p.Spec.Containers) == 0 {
		return "desktop"
	}
	return p.Spec.Containers[0].Name
}

func pullPolicy(p *corev1.Pod) corev1.PullPolicy {
	if len(p.Spec.Containers) == 0 {
		return corev1.PullIfNotPresent
	}
	return p.Spec.Containers[0].ImagePullPolicy
}

// imageID is a digest reference for an image, stable per image name.
func imageID(img string) string {
	sum := sha256.Sum256([]byte(img))
	repo := img
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	if !strings.Contains(repo, "/") {
		repo = "docker.io/library/" + repo
	}
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}

// pullError is the error text a registry and containerd give for a failed pull.
func pullError(img string, f pullFault) string {
	if f == pullHostile {
		return fmt.Sprintf("rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: "+
			"unexpected status from HEAD request: 403 Forbidden: registry says: \x1b[31mACCESS DENIED\x1b[0m"+
			"\x1b]52;c;ZGVtbyBjbGlwYm9hcmQK\x07 (demo: this text carries terminal escape sequences on purpose)", img, img)
	}
	return fmt.Sprintf("rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", img, img, img)
}

func sortPodSims(ps []*podSim) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].name != ps[j].name {
			return ps[i].name < ps[j].name
		}
		return ps[i].uid < ps[j].uid
	})
}

// created reports whether the containers of a Pod in this stage exist.
func (st stage) created() bool {
	return st == stageStarted || st == stageReady || st == stageCrashLoop
}
