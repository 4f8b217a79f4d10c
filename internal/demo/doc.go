// Package demo is the simulated cluster behind `ctpool-tui --demo`: it lets a
// newcomer see the dashboard work on a machine with no cluster, through the
// same informer and engine code paths as a real one.
//
// New returns a Sim whose Client is client-go's fake clientset, with an API
// server emulation in front of its object tracker (apiserver.go): writes get
// resourceVersions, UIDs and creation timestamps; updates that carry a
// resourceVersion are compare-and-swaps and delete preconditions hold, so the
// engine's Lease and ConfigMap guarantees keep; list and watch honour label
// and field selectors; watches never block or break a writer. Server-side
// apply is not simulated, and deletes take effect at once (no graceful
// deletion, so members are never seen Terminating).
//
// Everything New seeds is labelled ctpool-tui.dev/simulated=true and
// annotated ctpool-tui.dev/demo: a namespace (default "demo"), the nodes
// node-a and node-b (8 cpu, 16Gi), the sandboxd virtual node vk-sandbox-0 and
// the cocoon virtual node vk-cocoon-0 (each with its label and NoSchedule
// taint), and a default StorageClass. The pools desk (standard, 5 members),
// gpu (sandboxd, 8 members of 12Gi: only 5 fit) and kiosk (cocoon, 12
// members) are applied with engine.Engine.Apply.
//
// Step then plays, at the time Options.Now returns:
//   - the volume provisioner: a Pending claim is Bound to a new
//     PersistentVolume after about a second;
//   - kube-scheduler: node selector, taints, cpu, memory and Pod count, with
//     the scheduler's own "0/4 nodes are available: ..." message on
//     PodScheduled=False/Unschedulable, and a binding when capacity returns;
//   - the kubelets (and the two virtual kubelets): image pulls, container
//     statuses, readiness after a short random delay;
//   - the reconciler: engine.Reconcile on each pool every 4 seconds;
//   - users alice@example.com ... sybil@example.com, who claim with
//     engine.Claim and release with engine.Release, one action every 1-3 s;
//   - trouble, first within a minute, then now and then: a desktop that
//     crash-loops, an image pull that fails (ImagePullBackOff), a new desk
//     image tag (drift), a claim left to expire, a reconciler that stopped
//     mid-step (maintenance), and a pool shrunk below a claimed member
//     (above size) and restored later;
//   - Events for all of it (Scheduled, FailedScheduling, Pulling, Pulled,
//     Failed, BackOff, Created, Started, Killing, Provisioning...), the
//     oldest dropped beyond a few hundred.
//
// Demo shortcuts, written straight to the Lease through the client so that
// an hour-long story fits in a minute: a claim left to expire gets an
// acquireTime and renewTime more than an hour in the past; half of the new
// claims are backdated by up to 52 minutes so claims of every age show; the
// stranded reconciler Lease is written as taken almost ten minutes ago.
//
// Hostile text: engine.ValidateIdentity refuses identities with control
// characters, so no user has one. Instead the first failed pull carries a
// registry error with an ANSI colour sequence and an OSC 52 clipboard write,
// and the first crash a termination message with a screen clear, both as a
// real registry or program could send them; they reach the member row, the
// container status and the Events, where the dashboard must render them inert.
//
// Speed scales the delays, not the timestamps: the dashboard's clock and the
// simulation's stay the same. With the same Seed and the same sequence of
// clock readings a run is repeatable, as long as nothing else writes to the
// cluster; the dashboard's own actions (reconcile, resize, force-release,
// delete) go through the same clientset and the simulation copes with them.
package demo
