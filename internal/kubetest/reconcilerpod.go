package kubetest

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImportImage imports an OCI image archive (make image) into the real node's
// containerd, in the namespace the kubelet's CRI reads (k8s.io), and returns
// the name the archive's index gives the image (io.containerd.image.name).
// The name is removed from the node at the end of the test.
func (e *Env) ImportImage(t testing.TB, archive string) string {
	t.Helper()
	e.RequireNode(t)
	name, err := archiveImageName(archive)
	if err != nil {
		t.Fatalf("kubetest: %s: %v", archive, err)
	}
	ctr, sock, err := e.nodeCtr()
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	run := func(args ...string) ([]byte, error) {
		return exec.CommandContext(context.WithoutCancel(t.Context()), ctr,
			append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	}
	if out, err := run("images", "import", archive); err != nil {
		t.Fatalf("kubetest: ctr images import %s: %v\n%s", archive, err, out)
	}
	t.Cleanup(func() {
		if out, err := run("images", "rm", name); err != nil {
			t.Logf("kubetest: ctr images rm %s: %v\n%s", name, err, out)
		}
	})
	return name
}

// nodeCtr is the ctr beside the node's running containerd, and its socket.
func (e *Env) nodeCtr() (ctr, sock string, err error) {
	pid, err := os.ReadFile(filepath.Join(e.Dir, "containerd.pid"))
	if err != nil {
		return "", "", fmt.Errorf("the real node's containerd: %w", err)
	}
	exe, err := os.Readlink("/proc/" + strings.TrimSpace(string(pid)) + "/exe")
	if err != nil {
		return "", "", fmt.Errorf("the real node's containerd (pid %s): %w", strings.TrimSpace(string(pid)), err)
	}
	return filepath.Join(filepath.Dir(exe), "ctr"), filepath.Join(e.Dir, "node", "containerd", "containerd.sock"), nil
}

// archiveImageName reads the image's name from an OCI archive's index.
func archiveImageName(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", errors.New("no index.json: not an OCI image archive")
		}
		if err != nil {
			return "", err
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return "", fmt.Errorf("index.json: %w", err)
		}
		if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] == "" {
			return "", errors.New("index.json names no one image (io.containerd.image.name)")
		}
		return index.Manifests[0].Annotations["io.containerd.image.name"], nil
	}
}

// ServeAPIToNode lets the real node's Pods reach the API server with their
// in-cluster configuration, for the rest of the test: it forwards the
// kubernetes Service's ClusterIP and port (KUBERNETES_SERVICE_HOST and
// _PORT in every Pod), which the host's end of the node's link holds
// (testdata/cluster/node.sh), to the API server on loopback, TCP as it
// comes (the API server's certificate names that ClusterIP), as kube-proxy
// would. The plane runs no kube-proxy and its API server listens on
// loopback only. One test at a time: the address is this host's.
func (e *Env) ServeAPIToNode(t testing.TB) {
	t.Helper()
	e.RequireNode(t)
	svc, err := e.Client.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kubetest: the kubernetes Service: %v", err)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("kubetest: the kubernetes Service has %d ports, want 1", len(svc.Spec.Ports))
	}
	listen := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		t.Fatalf("kubetest: the API server's address %q: %v", e.Config.Host, err)
	}
	l, err := net.Listen("tcp", listen)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		unavailable(t, fmt.Sprintf("%s is no address of this host: the plane's real node has no link to the host yet (testdata/cluster/up adds it)", svc.Spec.ClusterIP))
	}
	if err != nil {
		t.Fatalf("kubetest: forwarding the kubernetes Service: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	track := func(c net.Conn, on bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if on && conns == nil {
			return false // closed
		}
		if on {
			conns[c] = true
		} else if conns != nil {
			delete(conns, c)
		}
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := net.Dial("tcp", u.Host)
				if err != nil {
					in.Close()
					return
				}
				if !track(in, true) || !track(out, true) {
					in.Close()
					out.Close()
					return
				}
				done := make(chan struct{}, 2)
				pipe := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					dst.Close()
					src.Close()
					done <- struct{}{}
				}
				go pipe(out, in)
				go pipe(in, out)
				<-done
				<-done
				track(in, false)
				track(out, false)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
}
