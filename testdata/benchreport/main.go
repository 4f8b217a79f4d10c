// Command benchreport reads `go test -bench` output on stdin and prints each
// performance target of ctpool-tui as a ratio measured in the same run, with
// PASS or FAIL. It exits 1 when a target is missed or its benchmarks are
// missing. Run it through `make bench`.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// target compares one metric of two benchmarks.
type target struct {
	what     string
	num, den string // benchmark names without the -GOMAXPROCS suffix
	metric   string // unit column, e.g. ns/op or ns/member
	max      float64
}

var targets = []target{
	{"engine.Observe per member, 10,000 vs 100 members", "BenchmarkObserve/members=10000", "BenchmarkObserve/members=100", "ns/member", 1.5},
	{"members view View() at 120x40, 10,000 vs 100 members", "BenchmarkMembersView10000", "BenchmarkMembersView100", "ns/op", 1.5},
	{"informer cache bytes, transformed vs untransformed Pods", "BenchmarkInformerCacheBytes/transformed", "BenchmarkInformerCacheBytes/raw", "bytes/member", 0.40},
}

var suffix = regexp.MustCompile(`-\d+$`)

func main() {
	metrics := map[string]map[string]float64{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := suffix.ReplaceAllString(f[0], "")
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		metrics[name] = m
	}
	fmt.Println()
	fmt.Println("performance targets (ratios measured in this run)")
	failed := false
	for _, t := range targets {
		n, okN := metrics[t.num][t.metric]
		d, okD := metrics[t.den][t.metric]
		if !okN || !okD || d == 0 {
			fmt.Printf("  MISSING  %-58s (no %s for %s or %s)\n", t.what, t.metric, t.num, t.den)
			failed = true
			continue
		}
		ratio := n / d
		verdict := "PASS"
		if ratio > t.max {
			verdict, failed = "FAIL", true
		}
		fmt.Printf("  %-7s  %-58s %.2fx (target <= %.2fx; %.0f vs %.0f %s)\n", verdict, t.what, ratio, t.max, n, d, t.metric)
	}
	if failed {
		os.Exit(1)
	}
}
