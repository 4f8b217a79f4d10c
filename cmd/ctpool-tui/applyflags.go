package main

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// applyFlags are apply's pool fields. Only the flags given change an existing pool.
type applyFlags struct {
	image, cpu, mem, disk, storageClass, mode string
	size                                      int
	privileged, init, isolate                 bool
	runtime, runtimeClass, template, net      string
	sizeClass, cocoonPool, cocoonImage        string
	cocoonMode, os                            string
	ttlSeconds                                int64
	podSecurity                               string
	runAsUser                                 int64
	pullSecrets, ingress, egress              []string
	minSize, maxSize, spare                   int
	power, settle                             string
	maxUnavailable, rolloutDeadline           string
}

func (f *applyFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.image, "image", "", "container image of the desktop (required for a new pool)")
	fs.IntVar(&f.size, "size", 1, "number of members (of an elastic pool: the size it starts from, within --min-size and --max-size; default their spare, within them)")
	fs.IntVar(&f.maxSize, "max-size", 0, "make the pool elastic: the reconciler keeps --spare free members ready by moving the size within --min-size and this ceiling; --max-size=0 makes it fixed again, at its current effective size unless --size is given")
	fs.IntVar(&f.minSize, "min-size", 0, "elastic pools: the size never goes below this")
	fs.IntVar(&f.spare, "spare", engine.DefaultSpare, "elastic pools: free members kept ready; claims that eat them grow the pool at once")
	fs.StringVar(&f.power, "power", engine.PowerRunning, "elastic pools: the free members beyond the spare keep running (running) or are stopped, their PVC kept (stopped)")
	fs.StringVar(&f.settle, "settle", engine.DefaultSettle.String(), "elastic pools: how long the pool has more free members than its spare before it shrinks")
	fs.StringVar(&f.maxUnavailable, "max-unavailable", engine.DefaultMaxUnavailable, "rollouts: at most this many members out of service at once while members of an earlier image are replaced, a count (3) or a percentage of the size (25%), at least 1; the free Ready members never drop below the spare (1 for a fixed pool) meanwhile")
	fs.StringVar(&f.rolloutDeadline, "rollout-deadline", engine.DefaultRolloutDeadline.String(), "rollouts: a new member not Ready within this counts as failed; 2 failed (or the whole first wave) halt the rollout")
	fs.StringVar(&f.cpu, "cpu", engine.DefaultCPU, "CPU of each member (request and limit)")
	fs.StringVar(&f.mem, "mem", engine.DefaultMemory, "memory of each member (request and limit)")
	fs.StringVar(&f.mem, "memory", engine.DefaultMemory, "alias of --mem")
	fs.StringVar(&f.disk, "disk", engine.DefaultDisk, "size of each member's data PVC")
	fs.StringVar(&f.storageClass, "storage-class", "", "StorageClass of the data PVCs (default: the cluster's default)")
	fs.BoolVar(&f.privileged, "privileged", false, "run members privileged, with their whole root on the PVC but /proc /sys /dev /run /tmp and files directly in / (trusted users only); the same as --pod-security privileged")
	fs.StringVar(&f.podSecurity, "pod-security", "", "Pod Security level the members satisfy: "+strings.Join(engine.PodSecurityLevels, ", ")+
		" (default baseline, privileged with --privileged); apply refuses a level the namespace's pod-security.kubernetes.io/enforce label would refuse")
	fs.Int64Var(&f.runAsUser, "run-as-user", 0, "restricted only: the user, group and fsGroup the members run as (default 1000)")
	fs.StringArrayVar(&f.pullSecrets, "image-pull-secret", nil, "Secret (kubernetes.io/dockerconfigjson) the members pull their image with; repeat for several; "+
		"replaces the pool's list, and --image-pull-secret= empties it; changing it drifts no member")
	fs.BoolVar(&f.isolate, "isolate", false, "own a NetworkPolicy for the pool: members accept traffic from no one but the definition's ingress peers and never from each other; "+
		"--isolate=false removes it (and the pool's ingress and egress peers)")
	fs.StringArrayVar(&f.ingress, "ingress", nil, `isolated pools: a source the members accept traffic from, as JSON: {"namespaceSelector":{...},"podSelector":{...}} or {"cidr":"10.0.0.0/8","except":[...]}, `+
		`with "ports":[...] to narrow it; repeat for several; replaces the pool's list, and --ingress= empties it`)
	fs.StringArrayVar(&f.egress, "egress", nil, "isolated pools: a destination the members may reach, in --ingress's form; given, it restricts egress to these and DNS; "+
		"replaces the pool's list, and --egress= empties it (egress open)")
	fs.BoolVar(&f.init, "init", false, "run the image's own entrypoint instead of sleep infinity")
	fs.StringVar(&f.mode, "mode", engine.ModeEphemeral, "pool mode (only ephemeral is supported)")
	fs.StringVar(&f.runtime, "runtime", engine.BackendStandard, "runtime backend: standard, sandboxd or cocoon")
	fs.StringVar(&f.runtimeClass, "runtime-class", "", "RuntimeClass of a standard member (Kata, gVisor, ...)")
	fs.StringVar(&f.template, "template", "", "sandboxd: the warm-pool template (required for sandboxd)")
	fs.StringVar(&f.net, "net", "", "sandboxd: network lane (none, egress)")
	fs.StringVar(&f.sizeClass, "size-class", "", "sandboxd: size class (small, medium, large)")
	fs.Int64Var(&f.ttlSeconds, "ttl-seconds", 0, "sandboxd: claim TTL in seconds (absent: 86400; 0: sandboxd's five-minute default)")
	fs.StringVar(&f.cocoonPool, "cocoon-pool", "", "cocoon: node pool (default \"default\")")
	fs.StringVar(&f.cocoonImage, "cocoon-image", "", "cocoon: image in the Cocoon image library (required for cocoon)")
	fs.StringVar(&f.cocoonMode, "cocoon-mode", "", "cocoon: run boots the image, clone clones a snapshot (default run)")
	fs.StringVar(&f.os, "os", "", "cocoon: guest OS family (linux, windows, macos)")
}

// spec merges the flags given onto the current spec (nil for a new pool).
func (f *applyFlags) spec(c *cobra.Command, cur *engine.Spec) (engine.Spec, error) {
	fs := c.Flags()
	set := fs.Changed
	var s engine.Spec
	if cur != nil {
		s = *cur
		if cur.Runtime != nil {
			rt := *cur.Runtime
			s.Runtime = &rt
		}
	} else {
		if !set("image") {
			return s, usageErr("--image is required to create a pool")
		}
		s = engine.Spec{CPU: f.cpu, Memory: f.mem, Disk: f.disk, Mode: f.mode, Size: f.size}
	}
	str := func(name string, dst *string, v string) {
		if set(name) {
			*dst = v
		}
	}
	str("image", &s.Image, f.image)
	str("cpu", &s.CPU, f.cpu)
	str("mem", &s.Memory, f.mem)
	str("memory", &s.Memory, f.mem)
	str("disk", &s.Disk, f.disk)
	str("storage-class", &s.StorageClass, f.storageClass)
	str("mode", &s.Mode, f.mode)
	if set("size") {
		s.Size = f.size
	}
	f.setElastic(c, &s)
	f.setRollout(c, &s)
	if err := f.setPodSecurity(c, &s); err != nil {
		return s, err
	}
	if set("image-pull-secret") {
		s.ImagePullSecrets = nil
		for _, n := range f.pullSecrets {
			if n != "" {
				s.ImagePullSecrets = append(s.ImagePullSecrets, n)
			}
		}
	}
	if set("init") {
		s.Init = f.init
	}
	if set("isolate") {
		s.Isolate = f.isolate
		if !f.isolate {
			s.Ingress, s.Egress = nil, nil
		}
	}
	for _, side := range []struct {
		flag string
		args []string
		dst  *[]engine.NetworkPeer
	}{{"ingress", f.ingress, &s.Ingress}, {"egress", f.egress, &s.Egress}} {
		if !set(side.flag) {
			continue
		}
		peers, err := parsePeers(side.flag, side.args)
		if err != nil {
			return s, err
		}
		*side.dst = peers
	}
	if s.Runtime == nil {
		s.Runtime = &engine.Runtime{}
	}
	rt := s.Runtime
	if set("runtime") && f.runtime != rt.Backend {
		// A new backend starts from a clean runtime block.
		*rt = engine.Runtime{Backend: f.runtime}
	}
	str("runtime-class", &rt.RuntimeClassName, f.runtimeClass)
	str("template", &rt.Template, f.template)
	str("net", &rt.Net, f.net)
	str("size-class", &rt.Size, f.sizeClass)
	if set("ttl-seconds") {
		v := f.ttlSeconds
		rt.TTLSeconds = &v
	}
	str("cocoon-pool", &rt.Pool, f.cocoonPool)
	str("cocoon-image", &rt.Image, f.cocoonImage)
	str("cocoon-mode", &rt.Mode, f.cocoonMode)
	str("os", &rt.OS, f.os)
	s.Default()
	if err := s.Validate(); err != nil {
		return s, opErr(err)
	}
	return s, nil
}

// setPodSecurity applies --pod-security, --privileged and --run-as-user to
// s. --privileged is --pod-security privileged, and --privileged=false
// leaves a privileged pool for baseline; giving both flags with different
// meanings is a usage error. A pool that leaves the restricted level drops
// its user unless --run-as-user is given (then Validate refuses it).
func (f *applyFlags) setPodSecurity(c *cobra.Command, s *engine.Spec) error {
	set := c.Flags().Changed
	switch {
	case set("pod-security") && set("privileged") && f.privileged != (f.podSecurity == engine.PodSecurityPrivileged):
		return usageErr("--privileged=%t conflicts with --pod-security %s: --privileged means --pod-security privileged; give one of them", f.privileged, f.podSecurity)
	case set("pod-security"):
		s.PodSecurity = f.podSecurity
		s.Privileged = f.podSecurity == engine.PodSecurityPrivileged
	case set("privileged"):
		s.Privileged = f.privileged
		if f.privileged {
			s.PodSecurity = engine.PodSecurityPrivileged
		} else if s.PodSecurity == engine.PodSecurityPrivileged {
			s.PodSecurity = "" // the default level of an unprivileged pool
		}
	}
	if set("run-as-user") {
		s.RunAsUser = f.runAsUser
	} else if s.PodSecurity != engine.PodSecurityRestricted {
		s.RunAsUser = 0
	}
	return nil
}

// parsePeers reads the JSON peers of --ingress or --egress; an empty
// argument is skipped (--ingress= empties the list). Fields the peer does
// not know are refused, so a typo does not open the pool.
func parsePeers(flag string, args []string) ([]engine.NetworkPeer, error) {
	var peers []engine.NetworkPeer
	for _, a := range args {
		if strings.TrimSpace(a) == "" {
			continue
		}
		var p engine.NetworkPeer
		dec := json.NewDecoder(strings.NewReader(a))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, usageErr("--%s %q: not a peer: %v; want JSON such as {\"podSelector\":{\"app\":\"broker\"}}", flag, a, err)
		}
		if dec.More() {
			return nil, usageErr("--%s %q: more than one JSON object; repeat the flag for several peers", flag, a)
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// setElastic merges the elastic flags given onto s. --max-size=0 makes the
// pool fixed again (its other elastic fields go); a pool made elastic
// without --size starts from its spare, within min and max.
func (f *applyFlags) setElastic(c *cobra.Command, s *engine.Spec) {
	set := c.Flags().Changed
	wasElastic := s.Elastic()
	if set("max-size") {
		if f.maxSize == 0 {
			*s = s.Fixed(s.Size)
			return
		}
		s.MaxSize = f.maxSize
	}
	if set("min-size") {
		s.MinSize = f.minSize
	}
	if set("spare") {
		v := f.spare
		s.Spare = &v
	}
	if set("power") {
		s.Power = f.power
		if f.power == engine.PowerRunning {
			s.Power = "" // the default is written as nothing
		}
	}
	if set("settle") {
		s.Settle = f.settle
	}
	if s.Elastic() && !wasElastic && !set("size") && s.MinSize <= s.MaxSize {
		s.Size = min(max(s.SpareTarget(), s.MinSize), s.MaxSize)
	}
}

// setRollout merges the rollout flags given onto s; a default is written as
// nothing, so that the pool stays readable by a release that knows neither
// field.
func (f *applyFlags) setRollout(c *cobra.Command, s *engine.Spec) {
	set := c.Flags().Changed
	if set("max-unavailable") {
		s.MaxUnavailable = f.maxUnavailable
		if f.maxUnavailable == engine.DefaultMaxUnavailable {
			s.MaxUnavailable = "" // the default is written as nothing
		}
	}
	if set("rollout-deadline") {
		s.RolloutDeadline = f.rolloutDeadline
		if d, err := time.ParseDuration(f.rolloutDeadline); err == nil && d == engine.DefaultRolloutDeadline {
			s.RolloutDeadline = ""
		}
	}
}
