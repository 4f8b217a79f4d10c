package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"io"
	"os"
	"time"
)

// Packing an archive: its entries, the tar.gz and zip writers.

// completionHelper is what kubectl (1.26 and later) runs to complete
// "kubectl ctpool ...": an executable named kubectl_complete-ctpool on the
// PATH. On windows kubectl finds it through PATHEXT, so a .cmd does.
func completionHelper(goos string) entry {
	if goos == "windows" {
		return entry{name: "kubectl_complete-" + pluginName + ".cmd", mode: 0o755, data: []byte(
			"@echo off\r\nrem Shell completion of \"kubectl " + pluginName + "\" (kubectl 1.26 and later look for this name on PATH).\r\n" +
				"kubectl-" + pluginName + ".exe __complete %*\r\n")}
	}
	return entry{name: "kubectl_complete-" + pluginName, mode: 0o755, data: []byte(
		"#!/bin/sh\n# Shell completion of \"kubectl " + pluginName + "\" (kubectl 1.26 and later look for this name on PATH).\n" +
			"exec kubectl-" + pluginName + " __complete \"$@\"\n")}
}

type entry struct {
	name string
	mode int64
	data []byte
}

// packTarGz writes the entries, in their order, as regular files owned by
// root with the given time; the gzip header carries no name and no time.
func packTarGz(entries []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     e.name,
			Mode:     e.mode,
			Size:     int64(len(e.data)),
			ModTime:  mtime,
			Uname:    "root",
			Gname:    "root",
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// packZip writes the entries, in their order, deflated, with the given time
// and their Unix modes.
func packZip(entries []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.DefaultCompression)
	})
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(os.FileMode(e.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
