# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are used by the scripts that source this file
# Shared settings of the local control-plane scripts (build, up, down, with-cluster).
# Sourced, never run.

CLUSTER_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOOLS_DIR="$CLUSTER_SRC/tools"

KWOK_VERSION="v0.8.0"
STATE_DIR="${CTPOOL_CLUSTER_DIR:-/tmp/ctpool-tui-cluster}"

# The Kubernetes versions the plane builds, oldest first: the range ctpool-tui
# supports (README.md, "Kubernetes versions"). The default is the newest, built
# from tools/go.mod; each other one from its own pinned module,
# tools/k8s-v1.MINOR (k8s.io/kubernetes and its staging modules at that
# release). etcd, kwok and the helper only talk to the API server and are
# built from tools/ whatever the version. K8S_VERSION picks one; up keeps it in
# the state dir (k8s-version), so later up, down and with-cluster runs on that
# dir, and kubetest's StartPlane, run the same binaries without the variable.
K8S_VERSIONS=(v1.34.4 v1.35.4 v1.36.3 v1.37.2)
K8S_DEFAULT_VERSION="${K8S_VERSIONS[-1]}"
# The version of the plane in STATE_DIR, if any: a state dir from before
# k8s-version was kept (port-offset alone) holds the default version.
STATE_K8S_VERSION=""
if [[ -s "$STATE_DIR/k8s-version" ]]; then
	STATE_K8S_VERSION="$(<"$STATE_DIR/k8s-version")"
elif [[ -s "$STATE_DIR/port-offset" ]]; then
	STATE_K8S_VERSION="$K8S_DEFAULT_VERSION"
fi
K8S_VERSION="${K8S_VERSION:-${STATE_K8S_VERSION:-$K8S_DEFAULT_VERSION}}"
if [[ " ${K8S_VERSIONS[*]} " != *" $K8S_VERSION "* ]]; then
	printf 'cluster: error: K8S_VERSION=%s is not one the plane builds: %s\n' "$K8S_VERSION" "${K8S_VERSIONS[*]}" >&2
	exit 1
fi
# require_state_version: a K8S_VERSION other than the state dir's names
# another plane than the one in STATE_DIR; up, down and with-cluster refuse
# it (build, which reads no state dir, does not).
require_state_version() {
	if [[ -n "$STATE_K8S_VERSION" && "$STATE_K8S_VERSION" != "$K8S_VERSION" ]]; then
		die "the plane in $STATE_DIR runs Kubernetes $STATE_K8S_VERSION, not K8S_VERSION=$K8S_VERSION; set CTPOOL_CLUSTER_DIR to the plane meant"
	fi
}
K8S_MINOR="${K8S_VERSION#v1.}"
K8S_MINOR="${K8S_MINOR%%.*}"
if [[ "$K8S_VERSION" == "$K8S_DEFAULT_VERSION" ]]; then
	K8S_TOOLS_DIR="$TOOLS_DIR"
else
	K8S_TOOLS_DIR="$TOOLS_DIR/k8s-v1.$K8S_MINOR"
fi

CACHE_ROOT="${CTPOOL_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ctpool-tui/cluster}"
BIN_DIR="$CACHE_ROOT/k8s-$K8S_VERSION-kwok-$KWOK_VERSION/bin"
# The real node's container runtime (tools/node) and its images.
CONTAINERD_VERSION="v2.4.2"
NODE_BIN_DIR="$CACHE_ROOT/containerd-$CONTAINERD_VERSION/bin"
NODE_BINARIES=(containerd containerd-shim-runc-v2 ctr)
IMAGE_DIR="$CACHE_ROOT/images"
# The real node's NetworkPolicy enforcer (tools/netpol): kube-network-policies
# as a library in a program of the plane's own.
NETPOL_VERSION="v0.8.0"
NETPOL_BIN_DIR="$CACHE_ROOT/kube-network-policies-$NETPOL_VERSION/bin"

# Loopback only, away from the default ports of a real cluster on the same host.
# CTPOOL_CLUSTER_PORT_OFFSET (default 0) is added to every port, so a second
# plane (another CTPOOL_CLUSTER_DIR) can run beside the first. up keeps it in
# the state dir, so later up/down/with-cluster runs on that dir (kubetest's
# StopComponent and StartPlane too) find the same ports without the variable.
if [[ -z "${CTPOOL_CLUSTER_PORT_OFFSET:-}" && -s "$STATE_DIR/port-offset" ]]; then
	CTPOOL_CLUSTER_PORT_OFFSET="$(<"$STATE_DIR/port-offset")"
fi
PORT_OFFSET="${CTPOOL_CLUSTER_PORT_OFFSET:-0}"
[[ "$PORT_OFFSET" =~ ^[0-9]+$ ]] && ((PORT_OFFSET < 40000)) ||
	{ printf 'cluster: error: CTPOOL_CLUSTER_PORT_OFFSET=%s is not a number below 40000\n' "$PORT_OFFSET" >&2; exit 1; }
ETCD_CLIENT_PORT=$((23790 + PORT_OFFSET))
ETCD_PEER_PORT=$((23800 + PORT_OFFSET))
APISERVER_PORT=$((16443 + PORT_OFFSET))
CONTROLLER_MANAGER_PORT=$((16457 + PORT_OFFSET))
SCHEDULER_PORT=$((16459 + PORT_OFFSET))
# kwok's server: health, and the kubelet API (exec, logs) of the nodes it
# serves; the nodes advertise it as their kubelet port.
KWOK_PORT=$((16447 + PORT_OFFSET))
# The real node's kubelet (node.sh): its API (exec, logs) and its health.
KUBELET_PORT=$((16450 + PORT_OFFSET))
KUBELET_HEALTHZ_PORT=$((16451 + PORT_OFFSET))

SERVICE_CIDR="10.96.0.0/16"

# Start order; down stops them in reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
# The real node's (node.sh), when up started it on this state dir.
NODE_COMPONENTS=(containerd kubelet)
if [[ -f "$STATE_DIR/node-enabled" ]]; then
	COMPONENTS+=("${NODE_COMPONENTS[@]}")
fi
# The node's NetworkPolicy enforcer (node.sh), when up started it.
if [[ -f "$STATE_DIR/netpol-enabled" ]]; then
	COMPONENTS+=(ctpool-netpol)
fi
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl kubelet)

# lock_state: serialises up and down on one state dir (the lock file sits beside
# it, since down removes the dir). Held until the script exits.
lock_state() {
	mkdir -p "$(dirname "$STATE_DIR")"
	exec 9>"$STATE_DIR.lock"
	flock -w 300 9 || die "another up/down on $STATE_DIR holds $STATE_DIR.lock for more than 300s"
}

log() { printf '%s [cluster] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

# comp_alive NAME: true when $STATE_DIR/NAME.pid names a live (not zombie)
# process whose program is NAME, or the supervisor that up runs it under
# (bash -c SCRIPT supervise-NAME ...).
comp_alive() {
	local pidf="$STATE_DIR/$1.pid" pid
	local -a argv
	[[ -f "$pidf" ]] || return 1
	pid="$(<"$pidf")"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	mapfile -d '' -t argv <"/proc/$pid/cmdline" 2>/dev/null || return 1
	((${#argv[@]})) || return 1
	[[ "${argv[0]##*/}" == "$1" ]] && return 0
	[[ "${argv[0]##*/}" == bash && "${argv[3]:-}" == "supervise-$1" ]]
}

# proc_running NAME: the process in NAME.pid exists and is not a zombie. For a
# component just started, whose pid cannot have been reused: it may not have
# exec'd its binary yet (comp_alive would still see the forking shell).
proc_running() {
	local pidf="$STATE_DIR/$1.pid" pid stat
	[[ -f "$pidf" ]] || return 1
	pid="$(<"$pidf")"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
	stat="${stat##*) }"
	[[ -n "$stat" && "${stat%% *}" != Z ]]
}

# port_in_use PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
