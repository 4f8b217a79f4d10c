package engine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// fakeImage lays out a small image root under dir: etc with a private file, a
// symlink, a hard link pair and an extended attribute; usr with a tool; home
// as a relative symlink into var; bin, lib and sbin as links into usr; no opt,
// root, srv, data, mnt or boot.
func fakeImage(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"etc/ssl", "usr/bin", "var/home/alice", "var/lib/apt"} {
		must(os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(dir, "etc/shadow"), []byte("root:*:1::::::\n"), 0o640))
	must(os.WriteFile(filepath.Join(dir, "etc/ssl/cert.pem"), []byte("cert\n"), 0o644))
	must(os.Symlink("ssl/cert.pem", filepath.Join(dir, "etc/cert.pem")))
	must(os.Link(filepath.Join(dir, "etc/ssl/cert.pem"), filepath.Join(dir, "etc/ssl/ca.pem")))
	must(os.WriteFile(filepath.Join(dir, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "var/home/alice/.profile"), []byte("x\n"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "var/lib/apt/state"), []byte("s\n"), 0o644))
	must(os.Chmod(filepath.Join(dir, "var/home/alice"), 0o700))
	must(os.Symlink("var/home", filepath.Join(dir, "home")))
	// merged-/usr links in the forms images use: relative, absolute, ./ and
	// ../ (the last two leave no trace on the PVC); usr/lib and usr/sbin are
	// missing, as a link's target may be.
	must(os.Symlink("usr/bin", filepath.Join(dir, "bin")))
	must(os.Symlink("/usr/lib", filepath.Join(dir, "lib")))
	must(os.Symlink("../usr/sbin", filepath.Join(dir, "sbin")))
	if os.Geteuid() == 0 {
		must(os.Lchown(filepath.Join(dir, "etc/shadow"), 0, 42))
		must(os.Lchown(filepath.Join(dir, "var/home/alice"), 1000, 1000))
		must(os.Lchown(filepath.Join(dir, "var/home/alice/.profile"), 1000, 1000))
	}
}

// copyTools is the shell and the commands the copy script runs with: the
// system's (GNU coreutils here), or busybox's applets alone on the PATH, as
// in a busybox-based image.
type copyTools struct {
	name    string
	shell   string
	path    string // PATH; "" keeps the test's
	gnu     bool   // GNU cp: extended attributes kept
	skipWhy string
}

func toolsets(t *testing.T) []copyTools {
	sets := []copyTools{{name: "system", shell: "/bin/sh", gnu: true}}
	if out, err := exec.Command("cp", "--version").Output(); err != nil || !strings.Contains(string(out), "GNU coreutils") {
		sets[0].gnu = false
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return append(sets, copyTools{name: "busybox", skipWhy: "no busybox on this system"})
	}
	dir := t.TempDir()
	for _, applet := range []string{"sh", "cp", "mv", "rm", "mkdir", "sync", "touch"} {
		if err := os.Symlink(bb, filepath.Join(dir, applet)); err != nil {
			t.Fatal(err)
		}
	}
	return append(sets, copyTools{name: "busybox", shell: filepath.Join(dir, "sh"), path: dir})
}

func runCopy(t *testing.T, tools copyTools, src, dst string) error {
	t.Helper()
	cmd := exec.Command(tools.shell, "-c", rootCopyScript(src, dst))
	if tools.path != "" {
		cmd.Env = []string{"PATH=" + tools.path}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("copy script: %v\n%s", err, out)
	}
	return err
}

func statT(t *testing.T, path string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

func topLevel(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// The copy script run for real with the system's /bin/sh and cp on a fake image.
func TestRootCopyScript(t *testing.T) {
	for _, tools := range toolsets(t) {
		t.Run(tools.name, func(t *testing.T) {
			if tools.skipWhy != "" {
				t.Skip(tools.skipWhy)
			}
			testRootCopyScript(t, tools)
		})
	}
}

func testRootCopyScript(t *testing.T, tools copyTools) {
	want := []string{".ctpool-root-v2", "bin", "boot", "data", "etc", "home", "lib", "lib32", "lib64", "libx32",
		"media", "mnt", "opt", "root", "sbin", "srv", "usr", "var"}

	t.Run("fresh PVC", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		fakeImage(t, src)
		xattr := syscall.Setxattr(filepath.Join(src, "etc/shadow"), "user.ctpool", []byte("kept"), 0)
		if err := runCopy(t, tools, src, dst); err != nil {
			t.Fatal(err)
		}
		if got := topLevel(t, dst); !equalStrings(got, want) {
			t.Fatalf("PVC holds %v, want %v (no staging left behind)", got, want)
		}
		for _, d := range []string{"opt", "root", "srv", "data", "mnt", "boot"} {
			fi, err := os.Lstat(filepath.Join(dst, d))
			if err != nil || !fi.IsDir() || len(topLevel(t, filepath.Join(dst, d))) != 0 {
				t.Errorf("%s, absent from the image, is %v (%v), want an empty directory", d, fi, err)
			}
		}
		// Top-level links stay links, relative to the PVC's top, whatever
		// form the image gave them; a missing target becomes a directory.
		for link, target := range map[string]string{"home": "var/home", "bin": "usr/bin", "lib": "usr/lib", "sbin": "usr/sbin"} {
			if l, err := os.Readlink(filepath.Join(dst, link)); err != nil || l != target {
				t.Errorf("%s on the PVC links to %q (%v), want %q", link, l, err, target)
			}
			if fi, err := os.Stat(filepath.Join(dst, link)); err != nil || !fi.IsDir() {
				t.Errorf("%s on the PVC resolves to %v (%v), want a directory inside the PVC", link, fi, err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dst, "home/alice/.profile")); err != nil || string(b) != "x\n" {
			t.Errorf("home/alice/.profile = %q, %v", b, err)
		}
		if fi, _ := os.Lstat(filepath.Join(dst, "etc/shadow")); fi == nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("etc/shadow mode %v, want -rw-r-----", fi)
		}
		if fi, _ := os.Lstat(filepath.Join(dst, "home/alice")); fi == nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("home/alice mode %v, want drwx------", fi)
		}
		if l, err := os.Readlink(filepath.Join(dst, "etc/cert.pem")); err != nil || l != "ssl/cert.pem" {
			t.Errorf("etc/cert.pem link = %q, %v, want ssl/cert.pem", l, err)
		}
		if a, b := statT(t, filepath.Join(dst, "etc/ssl/cert.pem")), statT(t, filepath.Join(dst, "etc/ssl/ca.pem")); a.Ino != b.Ino {
			t.Errorf("the hard link pair was split")
		}
		if os.Geteuid() == 0 {
			if st := statT(t, filepath.Join(dst, "etc/shadow")); st.Uid != 0 || st.Gid != 42 {
				t.Errorf("etc/shadow owned %d:%d, want 0:42", st.Uid, st.Gid)
			}
			if st := statT(t, filepath.Join(dst, "home/alice/.profile")); st.Uid != 1000 || st.Gid != 1000 {
				t.Errorf("home/alice/.profile owned %d:%d, want 1000:1000", st.Uid, st.Gid)
			}
		} else {
			t.Log("not root: ownership not checked")
		}
		switch {
		case !tools.gnu:
			t.Log("not GNU cp: extended attributes not expected")
		case xattr != nil:
			t.Logf("this file system takes no user xattr (%v): not checked", xattr)
		default:
			buf := make([]byte, 16)
			n, err := syscall.Getxattr(filepath.Join(dst, "etc/shadow"), "user.ctpool", buf)
			if err != nil || string(buf[:n]) != "kept" {
				t.Errorf("xattr user.ctpool = %q, %v, want \"kept\" (GNU cp -a keeps xattrs)", buf[:max(n, 0)], err)
			}
		}
	})

	t.Run("marker present: nothing is copied again", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		fakeImage(t, src)
		if err := runCopy(t, tools, src, dst); err != nil {
			t.Fatal(err)
		}
		// What an admin installed, and a change in the source, after the copy.
		if err := os.WriteFile(filepath.Join(dst, "usr/bin/installed"), []byte("mine\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(src, "usr/bin/tool")); err != nil {
			t.Fatal(err)
		}
		if err := runCopy(t, tools, src, dst); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"usr/bin/installed", "usr/bin/tool"} {
			if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
				t.Errorf("%s after the second run: %v", f, err)
			}
		}
	})

	t.Run("cut short: staging redone, finished directories kept", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		fakeImage(t, src)
		// A first run renamed etc into place and stopped while copying usr.
		if err := os.MkdirAll(filepath.Join(dst, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "etc/finished"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, ".usr.partial/half"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := runCopy(t, tools, src, dst); err != nil {
			t.Fatal(err)
		}
		if got := topLevel(t, dst); !equalStrings(got, want) {
			t.Fatalf("PVC holds %v, want %v", got, want)
		}
		if _, err := os.Stat(filepath.Join(dst, "etc/finished")); err != nil {
			t.Errorf("the etc renamed into place was copied again: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dst, "usr/half")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the half-done usr was kept: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dst, "usr/bin/tool")); err != nil {
			t.Errorf("usr was not copied again: %v", err)
		}
	})

	t.Run("a PVC of the chroot design is taken over", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		fakeImage(t, src)
		// The whole root at the top, under the old marker, without srv.
		for _, d := range []string{"bin", "etc", "home", "opt", "root", "usr/bin", "var"} {
			if err := os.MkdirAll(filepath.Join(dst, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{".ctpool-rootfs-ready", "usr/bin/installed"} {
			if err := os.WriteFile(filepath.Join(dst, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := runCopy(t, tools, src, dst); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dst, "usr/bin/installed")); err != nil {
			t.Errorf("the old root's usr was replaced: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dst, "usr/bin/tool")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the image was copied over the old root's usr: %v", err)
		}
		for _, f := range []string{"srv", rootMarker} {
			if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	})

	t.Run("a failed copy writes no marker", func(t *testing.T) {
		src, dst := t.TempDir(), t.TempDir()
		fakeImage(t, src)
		// var cannot be renamed into place: a file holds its name.
		if err := os.WriteFile(filepath.Join(dst, "var"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := runCopy(t, tools, src, dst); err == nil {
			t.Fatal("the copy succeeded although var could not be put in place")
		}
		if _, err := os.Stat(filepath.Join(dst, rootMarker)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("marker after a failed copy: %v", err)
		}
	})
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
