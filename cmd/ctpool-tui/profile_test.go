package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStartProfiles(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cpu, mem  string // "" unset, "file" a file in the test's dir, else the path as is
		wantFiles []string
		wantErr   string
	}{
		{name: "none"},
		{name: "CPU", cpu: "file", wantFiles: []string{"cpu"}},
		{name: "heap", mem: "file", wantFiles: []string{"mem"}},
		{name: "both", cpu: "file", mem: "file", wantFiles: []string{"cpu", "mem"}},
		{name: "a CPU file that cannot be made", cpu: "/nonexistent/dir/cpu", wantErr: envCPUProfile},
		{name: "a heap file that cannot be made", mem: "/nonexistent/dir/mem", wantErr: envMemProfile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{}
			for name, v := range map[string]string{envCPUProfile: tc.cpu, envMemProfile: tc.mem} {
				switch v {
				case "":
				case "file":
					env[name] = filepath.Join(dir, map[string]string{envCPUProfile: "cpu", envMemProfile: "mem"}[name])
				default:
					env[name] = v
				}
			}
			var stderr bytes.Buffer
			stop := startProfiles(func(k string) string { return env[k] }, &stderr)
			stop()
			if tc.wantErr == "" && stderr.Len() > 0 || tc.wantErr != "" && !strings.Contains(stderr.String(), tc.wantErr) {
				t.Fatalf("stderr %q, want %q", stderr.String(), tc.wantErr)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != len(tc.wantFiles) {
				t.Fatalf("files %v, want %v", entries, tc.wantFiles)
			}
			for _, name := range tc.wantFiles {
				f, err := os.Open(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				zr, err := gzip.NewReader(f) // a pprof profile is gzipped protobuf
				if err == nil {
					_, err = io.ReadAll(zr)
				}
				f.Close()
				if err != nil {
					t.Fatalf("%s is no profile: %v", name, err)
				}
			}
		})
	}
}
