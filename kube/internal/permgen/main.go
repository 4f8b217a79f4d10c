// Command permgen writes kube's permission table (permissions_gen.go) from
// the derivation in kube/internal/permderive. go generate ./kube runs it.
//
//	go run ./kube/internal/permgen -o kube/permissions_gen.go
//	go run ./kube/internal/permgen -check kube/permissions_gen.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/ctpool-tui/ctpool-tui/kube/internal/permderive"
)

func main() {
	out := flag.String("o", "", "write the table to this file")
	check := flag.String("check", "", "fail when this file differs from a fresh derivation")
	flag.Parse()
	if (*out == "") == (*check == "") {
		fmt.Fprintln(os.Stderr, "permgen: give one of -o FILE or -check FILE")
		os.Exit(2)
	}
	src, err := permderive.Source()
	if err != nil {
		fmt.Fprintln(os.Stderr, "permgen:", err)
		os.Exit(1)
	}
	if *check != "" {
		have, err := os.ReadFile(*check)
		if err != nil {
			fmt.Fprintln(os.Stderr, "permgen:", err)
			os.Exit(1)
		}
		if !bytes.Equal(have, src) {
			fmt.Fprintf(os.Stderr, "permgen: %s is stale: the actions' permissions changed; run go generate ./kube (or make generate) and commit it\n", *check)
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "permgen:", err)
		os.Exit(1)
	}
}
