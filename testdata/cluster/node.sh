# shellcheck shell=bash
# The plane's real node, node-real: a kubelet and containerd (with Debian's runc
# and CNI plugins) on this host, beside the kwok nodes. Sourced by up and down
# after lib.sh; never run.
#
# Networking. The kubelet, containerd and its streaming server listen on
# loopback only. The node object is created before the kubelet starts, with
# the address 127.0.0.1 (InternalIP), and the kubelet runs with
# --cloud-provider=external and no --node-ip, so it keeps the addresses it finds
# (nodestatus.NodeAddress returns early for an external provider) instead of
# refusing loopback; the API server reaches it at 127.0.0.1:KUBELET_PORT, over
# TLS with the API server's own certificate. Every non-loopback address lives
# in a network namespace the plane creates: the bridge plugin runs inside
# NODE_NETNS (a wrapper in the CNI bin dir), so the bridge and its gateway
# address live there, and each Pod's end of its veth in the Pod's own netns.
# No masquerade, no iptables: the kubelet runs with a PATH without sbin, so it
# finds no iptables and adds no chain to the host's firewall.
# A veth pair links the host and NODE_NETNS (node_link), as a node's Pod
# network is reachable from the node itself: the host routes the Pod subnet
# to it (the kubelet's HTTP probes, the API server's pods/proxy), and the
# Pods' default route leads through it to the host, which holds the
# kubernetes Service's ClusterIP (NODE_SERVICE_IP) on its end of the pair: a
# test that runs Pods talking to the API server forwards that address to the
# API server's loopback port, as kube-proxy would (kubetest's ServeAPIToNode).
#
# Outside its state dir (STATE_DIR/node) the node writes: cgroups under
# NODE_CGROUP in every cgroup v1 hierarchy, the netns NODE_NETNS, the sysctls
# the kubelet sets (NODE_SYSCTLS) and the fixed paths of NODE_HOST_DIRS.
# node_down restores or removes every one of them.

NODE_DIR="$STATE_DIR/node"
NODE_NAME=node-real
NODE_NETNS="ctpool-node-$PORT_OFFSET"
NODE_CGROUP="/ctpool-node-$PORT_OFFSET"
NODE_POD_SUBNET="10.245.0.0/24"
# The link between the host and NODE_NETNS: its two ends and their /30.
NODE_LINK_HOST="ctpool-h$PORT_OFFSET"
NODE_LINK_NODE="ctpool-n$PORT_OFFSET"
NODE_LINK_HOST_IP=10.245.255.1
NODE_LINK_NODE_IP=10.245.255.2
# The kubernetes Service's ClusterIP (the first address of SERVICE_CIDR),
# which the kubelet gives Pods as KUBERNETES_SERVICE_HOST.
NODE_SERVICE_IP=10.96.0.1
NODE_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
# Fixed paths the node writes outside its state dir: the kubelet's device
# plugins and container log links, the hostPath provisioner's volumes, the
# runc shim's socket dir, libcni's result cache. Removed by node_down unless
# they were there before; a child first.
NODE_HOST_DIRS=(/var/lib/kubelet/device-plugins /var/lib/kubelet /var/log/containers /tmp/hostpath_pv /run/containerd /var/lib/cni)
CNI_PLUGIN_DIR="${CTPOOL_CNI_PLUGIN_DIR:-/usr/lib/cni}"
RUNC="${CTPOOL_RUNC:-$(command -v runc 2>/dev/null || echo /usr/sbin/runc)}"
CONTAINERD_SOCK="$NODE_DIR/containerd/containerd.sock"
# Images the node imports (images builds them); the tests name them too.
NODE_IMAGES=(pause debian busybox crash)

ctr_node() { "$NODE_BIN_DIR/ctr" --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }

# node_unavailable: why this host cannot run the node, or nothing.
node_unavailable() {
	((EUID == 0)) || { echo "not root"; return; }
	[[ -x "$RUNC" ]] || { echo "no runc (apt-get install runc)"; return; }
	[[ -x "$CNI_PLUGIN_DIR/bridge" && -x "$CNI_PLUGIN_DIR/host-local" && -x "$CNI_PLUGIN_DIR/loopback" ]] ||
		{ echo "no CNI plugins in $CNI_PLUGIN_DIR (apt-get install containernetworking-plugins)"; return; }
	command -v ip >/dev/null || { echo "no ip (apt-get install iproute2)"; return; }
	[[ -d /sys/fs/cgroup/memory && -d /sys/fs/cgroup/cpu ]] || { echo "no cgroup v1 memory and cpu hierarchies"; return; }
}

node_cgroup_dirs() {
	local h
	for h in /sys/fs/cgroup/*/; do
		[[ -d "$h" && ! -L "${h%/}" ]] || continue
		echo "${h%/}$NODE_CGROUP"
	done
}

node_prepare() {
	mkdir -p "$NODE_DIR"/{kubelet,pod-logs,volume-plugins,cni/bin,cni/conf,cni/ipam,containerd/certs.d/_default}
	# What the kubelet changes outside its root, recorded once, restored by node_down.
	local other
	if [[ ! -f "$NODE_DIR/host-before" ]] && other="$(other_node_running)" &&
		other="$(tr '\0' '\n' <"/proc/$other/cmdline" | sed -n 's|/containerd/config.toml$||p')" &&
		[[ -s "$other/host-before" ]]; then
		# Another plane's node changed the host first: its record is the host's.
		cp "$other/host-before" "$NODE_DIR/host-before.tmp"
		mv "$NODE_DIR/host-before.tmp" "$NODE_DIR/host-before"
	fi
	if [[ ! -f "$NODE_DIR/host-before" ]]; then
		{
			for s in "${NODE_SYSCTLS[@]}"; do echo "sysctl $s $(sysctl -n "$s")"; done
			for d in "${NODE_HOST_DIRS[@]}"; do
				[[ -e "$d" ]] && echo "existed $d"
			done
		} >"$NODE_DIR/host-before.tmp"
		mv "$NODE_DIR/host-before.tmp" "$NODE_DIR/host-before"
	fi
	local d
	while read -r d; do mkdir -p "$d"; done < <(node_cgroup_dirs)

	ip netns list | grep -qw "^$NODE_NETNS" || ip netns add "$NODE_NETNS"
	ip -n "$NODE_NETNS" link set lo up
	node_link

	# The bridge plugin (and the host-local IPAM it calls) runs in NODE_NETNS.
	cat >"$NODE_DIR/cni/bin/bridge.tmp" <<EOF
#!/bin/sh
exec ip netns exec $NODE_NETNS $CNI_PLUGIN_DIR/bridge "\$@"
EOF
	chmod 755 "$NODE_DIR/cni/bin/bridge.tmp"
	mv "$NODE_DIR/cni/bin/bridge.tmp" "$NODE_DIR/cni/bin/bridge"
	ln -sfn "$CNI_PLUGIN_DIR/host-local" "$NODE_DIR/cni/bin/host-local"
	ln -sfn "$CNI_PLUGIN_DIR/loopback" "$NODE_DIR/cni/bin/loopback"
	cat >"$NODE_DIR/cni/conf/10-ctpool.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ctpool-node",
  "plugins": [{
    "type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": false,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "$NODE_POD_SUBNET"}]], "dataDir": "$NODE_DIR/cni/ipam"}
  }]
}
EOF
	# No registry is reachable: every pull goes to a closed loopback port and
	# fails at once (ErrImagePull), never to the network.
	cat >"$NODE_DIR/containerd/certs.d/_default/hosts.toml" <<EOF
server = "http://127.0.0.1:9"
[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
EOF
	cat >"$NODE_DIR/containerd/config.toml" <<EOF
version = 3
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$CONTAINERD_SOCK"

[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"

[plugins.'io.containerd.internal.v1.opt']
  path = "$NODE_DIR/containerd/opt"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "ctpool.test/pause:1"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$NODE_DIR/containerd/certs.d"

[plugins.'io.containerd.cri.v1.runtime']
  # The host's root lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$RUNC"
        Root = "$NODE_DIR/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$NODE_DIR/cni/bin"]
    conf_dir = "$NODE_DIR/cni/conf"
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
	cat >"$NODE_DIR/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $STATE_DIR/pki/apiserver.crt
tlsPrivateKeyFile: $STATE_DIR/pki/apiserver.key
# Only the API server reaches this port (loopback, on a test host).
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
cgroupRoot: $NODE_CGROUP
failCgroupV1: false
failSwapOn: false
podLogsDir: $NODE_DIR/pod-logs
volumePluginDir: $NODE_DIR/volume-plugins
resolvConf: ""
maxPods: 30
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
nodeStatusUpdateFrequency: 2s
# Renewed every 5 s (a quarter of it): the controller-manager's 30 s grace
# period sees a stopped kubelet within about 30 s.
nodeLeaseDurationSeconds: 20
syncFrequency: 10s
fileCheckFrequency: 0s
registerNode: true
EOF
}

# node_link: the veth pair between the host and NODE_NETNS (see the top of
# this file); kept when there. Another plane's real node on this host holds
# the same addresses: then this node's Pods stay unreachable from the host,
# as before the link, and up says so.
node_link() {
	ip link show "$NODE_LINK_HOST" >/dev/null 2>&1 && return 0
	if [[ -n "$(ip -o addr show to "$NODE_LINK_HOST_IP/32")" ]]; then
		log "warning: $NODE_LINK_HOST_IP is taken (another plane's real node?): the Pods of $NODE_NAME are not reachable from the host"
		return 0
	fi
	ip link add "$NODE_LINK_HOST" type veth peer name "$NODE_LINK_NODE" netns "$NODE_NETNS"
	ip addr add "$NODE_LINK_HOST_IP/30" dev "$NODE_LINK_HOST"
	ip addr add "$NODE_SERVICE_IP/32" dev "$NODE_LINK_HOST"
	ip link set "$NODE_LINK_HOST" up
	ip -n "$NODE_NETNS" addr add "$NODE_LINK_NODE_IP/30" dev "$NODE_LINK_NODE"
	ip -n "$NODE_NETNS" link set "$NODE_LINK_NODE" up
	ip -n "$NODE_NETNS" route replace default via "$NODE_LINK_HOST_IP"
	ip netns exec "$NODE_NETNS" sysctl -qw net.ipv4.ip_forward=1
	ip route replace "$NODE_POD_SUBNET" via "$NODE_LINK_NODE_IP" dev "$NODE_LINK_HOST"
}

node_object() {
	cat <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $NODE_NAME
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: $NODE_NAME
    kubernetes.io/os: linux
    ctpool.test/node: real
spec:
  taints:
  - {key: ctpool.test/real-node, value: "true", effect: NoSchedule}
status:
  addresses:
  - {type: InternalIP, address: 127.0.0.1}
  - {type: Hostname, address: $NODE_NAME}
EOF
}

# node_up: starts containerd and the kubelet (kept when running), imports the
# images, waits for node-real to be Ready. Uses up's start, wait_ready and poll.
node_up() {
	local why
	why="$(node_unavailable)"
	if [[ -n "$why" ]]; then
		log "not starting the real node ($NODE_NAME): $why; tests that need it skip"
		rm -f "$STATE_DIR/node-enabled"
		return 0
	fi
	echo on >"$STATE_DIR/node-enabled"
	"$CLUSTER_SRC/images" >/dev/null || die "building the node's images failed"
	node_prepare
	"${kubectl[@]}" get node "$NODE_NAME" >/dev/null 2>&1 ||
		node_object | "${kubectl[@]}" create -f - >>"$STATE_DIR/apply.log" 2>&1 ||
		die "creating node $NODE_NAME failed (see $STATE_DIR/apply.log)"

	# containerd and the kubelet run with the umask a node's init system
	# gives them (up's own is 077, for its keys): the directories they make
	# for a container, its / among them, must be searchable by the
	# container's user, which need not be root.
	local mask
	mask="$(umask)"
	umask 022
	PATH="$NODE_BIN_DIR:$PATH" COMP_BIN="$NODE_BIN_DIR" start containerd - --config "$NODE_DIR/containerd/config.toml"
	local deadline=$((SECONDS + START_TIMEOUT))
	until "$NODE_BIN_DIR/ctr" --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; do
		proc_running containerd || fail containerd "exited during start-up"
		((SECONDS < deadline)) || fail containerd "not serving $CONTAINERD_SOCK after ${START_TIMEOUT}s"
		sleep 0.2 # poll interval
	done
	log "containerd ready"
	local i ref
	for i in "${NODE_IMAGES[@]}"; do
		ref="ctpool.test/$([[ $i == pause ]] && echo pause || echo "desktop-$i"):1"
		ctr_node images check "name==$ref" 2>/dev/null | grep -q "$ref" && continue
		ctr_node images import --label io.cri-containerd.pinned=pinned "$IMAGE_DIR/$i.tar" >>"$NODE_DIR/import.log" 2>&1 ||
			{ tail -n 5 "$NODE_DIR/import.log" >&2; die "importing $IMAGE_DIR/$i.tar failed"; }
	done

	# PATH without sbin: no iptables for the kubelet (see the top of this file).
	PATH="/usr/local/bin:/usr/bin:/bin" start kubelet "$KUBELET_PORT" \
		--config="$NODE_DIR/kubelet-config.yaml" \
		--kubeconfig="$STATE_DIR/kubelet.kubeconfig" \
		--root-dir="$NODE_DIR/kubelet" \
		--hostname-override="$NODE_NAME" \
		--cloud-provider=external \
		--v=1
	umask "$mask"
	wait_ready kubelet "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
	node_real_ready() {
		[[ "$("${kubectl[@]}" get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
	}
	poll "node $NODE_NAME Ready (kubelet)" node_real_ready
	log "real node $NODE_NAME ready"
}

# node_kill_pods: stops every Pod sandbox and container of the node's
# containerd (the kubelet is stopped first, so nothing restarts them).
node_kill_pods() {
	[[ -S "$CONTAINERD_SOCK" ]] || return 0
	local t c
	for t in $(ctr_node tasks list -q 2>/dev/null); do
		ctr_node tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
	done
	for t in $(ctr_node tasks list -q 2>/dev/null); do
		ctr_node tasks delete -f "$t" >/dev/null 2>&1 || true
	done
	for c in $(ctr_node containers list -q 2>/dev/null); do
		ctr_node containers delete "$c" >/dev/null 2>&1 || true
	done
}

# other_node_running: prints the pid of a containerd of another plane's real
# node (another state dir) and succeeds, when one runs.
other_node_running() {
	local p cmd
	for p in $(pgrep -x containerd 2>/dev/null); do
		cmd="$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" || continue
		[[ "$cmd" == *"/node/containerd/config.toml"* && "$cmd" != *"$NODE_DIR/containerd/config.toml"* ]] || continue
		echo "$p"
		return 0
	done
	return 1
}

# node_down: after the kubelet and containerd are stopped: no shim, mount,
# netns or cgroup of the node is left, and the host's sysctls are restored.
node_down() {
	[[ -d "$NODE_DIR" ]] || return 0
	local p m d k v other=""
	# shims outlive containerd by design
	for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null || true
	done
	# container processes the shims leave behind: everything in the node's cgroups
	while read -r d; do
		[[ -d "$d" ]] || continue
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
	done < <(node_cgroup_dirs)
	# mounts under the node's dir (rootfs overlays, volumes, netns), deepest first
	for m in $(awk -v d="$NODE_DIR" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null || true
	done
	# (deleting the netns deletes the pair and the host's route too; first
	# the host's end, in case the netns is gone already)
	ip link del "$NODE_LINK_HOST" 2>/dev/null || true
	ip netns list 2>/dev/null | grep -qw "^$NODE_NETNS" && ip netns delete "$NODE_NETNS"
	while read -r d; do
		[[ -d "$d" ]] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[[ -d "$d" ]] && log "warning: cgroup $d is left (processes still in it?)"
	done < <(node_cgroup_dirs)
	if [[ -f "$NODE_DIR/host-before" ]]; then
		while read -r k v rest; do
			[[ "$k" == sysctl ]] && sysctl -qw "$v=$rest"
		done <"$NODE_DIR/host-before"
		if other="$(other_node_running)"; then
			# the fixed paths are shared: another plane's node still uses them
			log "keeping ${NODE_HOST_DIRS[*]}: the real node of another plane runs ($other)"
		else
			for d in "${NODE_HOST_DIRS[@]}"; do
				grep -qx "existed $d" "$NODE_DIR/host-before" || rm -rf "$d"
			done
		fi
	fi
	# What is left is a failure of down, named.
	local left=()
	ip netns list 2>/dev/null | grep -qw "^$NODE_NETNS" && left+=("netns $NODE_NETNS")
	ip link show "$NODE_LINK_HOST" >/dev/null 2>&1 && left+=("link $NODE_LINK_HOST")
	while read -r d; do [[ -d "$d" ]] && left+=("cgroup $d"); done < <(node_cgroup_dirs)
	awk -v d="$NODE_DIR" 'index($5, d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo && left+=("mounts under $NODE_DIR")
	if [[ -f "$NODE_DIR/host-before" ]]; then
		while read -r k v rest; do
			case "$k" in
			sysctl) [[ "$(sysctl -n "$v")" == "$rest" ]] || left+=("sysctl $v=$(sysctl -n "$v") (was $rest)") ;;
			esac
		done <"$NODE_DIR/host-before"
		if [[ -z "$other" ]]; then
			for d in "${NODE_HOST_DIRS[@]}"; do
				[[ -e "$d" ]] && ! grep -qx "existed $d" "$NODE_DIR/host-before" && left+=("$d")
			done
		fi
	fi
	rm -f "$STATE_DIR/node-enabled"
	((${#left[@]} == 0)) || die "the real node left behind: ${left[*]}"
}

# ---- NetworkPolicy ----------------------------------------------------------
# The node's NetworkPolicy enforcer, ctpool-netpol (tools/netpol): the
# controller of sigs.k8s.io/kube-network-policies, which decides on the first
# packet of each connection in user space, through an NFQUEUE. The kernels of
# the test hosts lack nft's `queue` expression (CONFIG_NFT_QUEUE), so the
# library's own nftables rules cannot be loaded; the plane adds one
# iptables-nft rule instead, in NODE_NETNS: every new connection crossing the
# bridge (br_netfilter hands bridged packets to the FORWARD chain) goes to
# queue NETPOL_QUEUE. The enforcer runs in NODE_NETNS and dials the API server
# from the host's namespace (see tools/netpol/main.go).
#
# The rule is added only once the enforcer listens on the queue (it opens it
# after its informers have synced), and carries --queue-bypass: while no
# enforcer listens (stopped with `down ctpool-netpol`, or crashed) packets
# pass unfiltered instead of being dropped, so the node's Pods keep their
# network; NetworkPolicy is then not enforced. The rule goes with the netns.
NETPOL_QUEUE=100
NETPOL_RULE=(FORWARD -m conntrack --ctstate NEW -m comment --comment ctpool-netpol
	-j NFQUEUE --queue-num "$NETPOL_QUEUE" --queue-bypass)

# netpol_unavailable: why the node cannot enforce NetworkPolicy, or nothing.
netpol_unavailable() {
	command -v iptables-nft >/dev/null || { echo "no iptables-nft (apt-get install iptables)"; return; }
	[[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] || echo "the kernel has no br_netfilter"
}

# netpol_listening: the enforcer has bound its queue in NODE_NETNS.
netpol_listening() {
	ip netns exec "$NODE_NETNS" awk -v q="$NETPOL_QUEUE" '$1 == q { found = 1 } END { exit !found }' \
		/proc/net/netfilter/nfnetlink_queue 2>/dev/null
}

# netpol_up: starts the enforcer (kept when running), waits until it listens,
# then adds the queue rule. After node_up; uses up's start, fail and poll.
netpol_up() {
	local why
	why="$(netpol_unavailable)"
	if [[ -n "$why" ]]; then
		log "not enforcing NetworkPolicy on $NODE_NAME: $why; the tests that need it skip"
		rm -f "$STATE_DIR/netpol-enabled"
		return 0
	fi
	echo on >"$STATE_DIR/netpol-enabled"
	ip netns exec "$NODE_NETNS" sysctl -qw net.bridge.bridge-nf-call-iptables=1
	COMP_BIN="$NETPOL_BIN_DIR" start ctpool-netpol - \
		-kubeconfig "$STATE_DIR/admin.kubeconfig" \
		-netns "/run/netns/$NODE_NETNS" \
		-node "$NODE_NAME" \
		-queue "$NETPOL_QUEUE" \
		-v=1
	local deadline=$((SECONDS + START_TIMEOUT))
	until netpol_listening; do
		proc_running ctpool-netpol || fail ctpool-netpol "exited during start-up"
		((SECONDS < deadline)) || fail ctpool-netpol "not listening on NFQUEUE $NETPOL_QUEUE in $NODE_NETNS after ${START_TIMEOUT}s"
		sleep 0.2 # poll interval
	done
	ip netns exec "$NODE_NETNS" iptables-nft -w -C "${NETPOL_RULE[@]}" 2>/dev/null ||
		ip netns exec "$NODE_NETNS" iptables-nft -w -A "${NETPOL_RULE[@]}" ||
		die "adding the NFQUEUE rule in $NODE_NETNS failed"
	log "NetworkPolicy enforced on $NODE_NAME (ctpool-netpol, NFQUEUE $NETPOL_QUEUE)"
}
