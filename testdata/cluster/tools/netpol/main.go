// Command ctpool-netpol enforces NetworkPolicy on the plane's real node with
// the controller of sigs.k8s.io/kube-network-policies, used as a library.
//
// The library's own command reads only in-cluster configuration, and its
// nftables rules need nft's `queue` expression, which the test hosts' kernels
// lack (CONFIG_NFT_QUEUE unset). This program gives the controller a
// kubeconfig and runs it in the node's network namespace (-netns), where the
// plane installs an iptables-nft NFQUEUE rule of its own (see up); the
// controller's verdicts on the first packet of each connection are the
// library's. Its attempt to sync its own nftables table fails on such a kernel
// and is logged; nothing else depends on it.
//
// With -netns the program re-executes itself inside that namespace, keeping a
// descriptor of the namespace it was started in: the API server, on the host's
// loopback, is dialled from there, by one OS thread that stays in it. Every
// other thread, and every socket the controller opens (the NFQUEUE netlink
// socket among them), is in the node's namespace.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

// hostNetnsEnv names the descriptor of the namespace the program was started
// in, passed across the re-execution.
const hostNetnsEnv = "CTPOOL_NETPOL_HOST_NETNS_FD"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the enforcer (required)")
	netnsPath := flag.String("netns", "", "network namespace (a path, e.g. /run/netns/NAME) whose traffic is enforced; empty: the current one")
	nodeName := flag.String("node", "", "name of the node whose Pods are enforced (required)")
	queueID := flag.Int("queue", 100, "NFQUEUE number the netfilter rule sends packets to")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *nodeName == "" {
		fmt.Fprintln(os.Stderr, "ctpool-netpol: -kubeconfig and -node are required")
		os.Exit(2)
	}
	if *netnsPath != "" && os.Getenv(hostNetnsEnv) == "" {
		if err := reexecIn(*netnsPath); err != nil {
			klog.Fatalf("entering %s: %v", *netnsPath, err)
		}
	}
	if err := run(*kubeconfig, *nodeName, *queueID); err != nil {
		klog.Fatal(err)
	}
}

// reexecIn runs this program again with the calling thread in the network
// namespace at path, and the namespace it leaves open as a descriptor; it
// returns only on failure.
func reexecIn(path string) error {
	runtime.LockOSThread()
	host, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY, 0) // inherited by the new image
	if err != nil {
		return err
	}
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), hostNetnsEnv+"="+strconv.Itoa(host))
	return syscall.Exec(self, os.Args, env)
}

// hostDialer returns a dial function whose sockets are opened in the
// namespace of descriptor fd, by one goroutine locked to a thread that stays
// there. A locked goroutine resumes on its own thread after it blocks, so
// connect and every later read and write use the socket opened there.
func hostDialer(fd int) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	type result struct {
		conn net.Conn
		err  error
	}
	type request struct {
		ctx           context.Context
		network, addr string
		res           chan result
	}
	reqs := make(chan request)
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the thread is not returned to the scheduler in
		// another namespace, and ends with the program.
		runtime.LockOSThread()
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ready <- err
			return
		}
		ready <- nil
		d := net.Dialer{Timeout: 10 * time.Second}
		for r := range reqs {
			c, err := d.DialContext(r.ctx, r.network, r.addr)
			r.res <- result{c, err}
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("entering the starting namespace: %w", err)
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		r := request{ctx, network, addr, make(chan result, 1)}
		select {
		case reqs <- r:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		res := <-r.res
		return res.conn, res.err
	}, nil
}

func run(kubeconfig, nodeName string, queueID int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	if s := os.Getenv(hostNetnsEnv); s != "" {
		fd, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", hostNetnsEnv, s, err)
		}
		if cfg.Dial, err = hostDialer(fd); err != nil {
			return err
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()

	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := networkpolicy.NewController(
		client,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		nil, nil, nil, nil, // no AdminNetworkPolicy
		networkpolicy.Config{
			QueueID:  queueID,
			NodeName: nodeName,
			// The controller's NRI plugin finds no NRI socket (the plane's
			// containerd runs without NRI) and exits; it must still be
			// created: the controller looks up unknown addresses in it.
			NRIdisabled: false,
		},
	)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	klog.InfoS("enforcing NetworkPolicy", "node", nodeName, "queue", queueID)
	return controller.Run(ctx)
}
