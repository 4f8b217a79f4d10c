package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// cocoonNameRule is the VM name cocoon accepts (cocoon's types.validName).
var cocoonNameRule = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// checkVMName fails unless name is a DNS-1123 label cocoon accepts.
func checkVMName(t *testing.T, ns, member, name string) {
	t.Helper()
	if len(name) > CocoonVMNameMaxLength {
		t.Fatalf("CocoonVMName(%q, %q) = %q: %d characters, more than %d", ns, member, name, len(name), CocoonVMNameMaxLength)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		t.Fatalf("CocoonVMName(%q, %q) = %q is no DNS-1123 label: %v", ns, member, name, errs)
	}
	if !cocoonNameRule.MatchString(name) {
		t.Fatalf("CocoonVMName(%q, %q) = %q is no name cocoon accepts", ns, member, name)
	}
}

// The digests below are the first 10 hex digits of sha256("<ns>/<member>"),
// computed apart from the engine.
func TestCocoonVMName(t *testing.T) {
	longNS := strings.Repeat("abcdefghij", 6) + "abc"                                   // 63, the longest namespace
	longMember := MemberName("p"+strings.Repeat("q", MaxPoolNameLength-1), MaxPoolSize) // the longest member apply allows
	cutNS := strings.Repeat("x", 40) + "-tail-of-a-namespace"
	tests := []struct {
		name, ns, member, want string
	}{
		{"short", "vdi", "desk-2", "vdi-vdi-desk-2-ddd72194c1"},
		{"namespace a-b, pool c", "a-b", "c-1", "vdi-a-b-c-1-c2a065ef5b"},
		{"namespace a, pool b-c", "a", "b-c-1", "vdi-a-b-c-1-483187c802"},
		// The namespace is cut to one character; the member stays whole.
		{"longest namespace and member", longNS, longMember, "vdi-a-" + longMember + "-40738660b4"},
		// Cut at a '-', which is dropped.
		{"namespace cut at a hyphen", cutNS, "desk-1", "vdi-" + strings.Repeat("x", 40) + "-desk-1-2d75c5046d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CocoonVMName(tt.ns, tt.member)
			if got != tt.want {
				t.Fatalf("CocoonVMName(%q, %q) = %q, want %q", tt.ns, tt.member, got, tt.want)
			}
			checkVMName(t, tt.ns, tt.member, got)
		})
	}
	if a, b := CocoonVMName("a-b", "c-1"), CocoonVMName("a", "b-c-1"); a == b {
		t.Fatalf("namespace a-b with pool c and namespace a with pool b-c share the VM name %q", a)
	}
	// Through the Pods the engine builds, as vk-cocoon reads them.
	spec := baseSpec(1)
	spec.Runtime = &Runtime{Backend: BackendCocoon, Image: "ubuntu-dev-base"}
	spec.Default()
	a := BuildPod("a-b", "c", 1, spec).Annotations[CocoonAnnotationVMName]
	b := BuildPod("a", "b-c", 1, spec).Annotations[CocoonAnnotationVMName]
	if a == b || a != "vdi-a-b-c-1-c2a065ef5b" || b != "vdi-a-b-c-1-483187c802" {
		t.Fatalf("Pods of a-b/c-1 and a/b-c-1 carry VM names %q and %q", a, b)
	}
}

// randLabel is a random DNS label of 1..max characters from alphabet
// (letters, digits and '-'), starting with first and ending with a letter or
// digit. Short alphabets and lengths make the readable parts of many pairs
// equal, so that the digest has to tell them apart.
func randLabel(r *rand.Rand, max int, first, alphabet string) string {
	n := 1 + r.IntN(max)
	b := make([]byte, n)
	b[0] = first[r.IntN(len(first))]
	for i := 1; i < n; i++ {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	if n > 1 && b[n-1] == '-' {
		b[n-1] = 'z'
	}
	return string(b)
}

// TestCocoonVMNameProperty: over many (namespace, member) pairs that apply
// accepts, built to make readable parts clash (few letters, hyphens
// everywhere, pairs that split one string at different hyphens, namespaces
// that share a prefix longer than the cut), no two distinct pairs share a VM
// name, and every name is a DNS-1123 label cocoon accepts, at most 63
// characters.
func TestCocoonVMNameProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	type pair struct{ ns, member string }
	seen := map[string]pair{}
	check := func(p pair) {
		if errs := validation.IsDNS1123Label(p.ns); len(errs) > 0 {
			t.Fatalf("test made an invalid namespace %q: %v", p.ns, errs)
		}
		name := CocoonVMName(p.ns, p.member)
		checkVMName(t, p.ns, p.member, name)
		if other, ok := seen[name]; ok && other != p {
			t.Fatalf("%s/%s and %s/%s share the VM name %q", other.ns, other.member, p.ns, p.member, name)
		}
		seen[name] = p
	}
	const lower, digits = "abcdefghijklmnopqrstuvwxyz", "0123456789"
	pairs := 0
	for i := 0; i < 20000; i++ {
		alphabet := lower + digits + "-"
		if i%2 == 0 {
			alphabet = "ab-" // clashing readable parts
		}
		ns := randLabel(r, 63, lower+digits, alphabet)
		pool := randLabel(r, MaxPoolNameLength, lower, alphabet)
		if ValidatePoolName(pool) != nil {
			t.Fatalf("test made an invalid pool name %q", pool)
		}
		idx := 1 + r.IntN(MaxPoolSize)
		if i%3 == 0 {
			idx = 1 + r.IntN(3)
		}
		check(pair{ns, MemberName(pool, idx)})
		pairs++
	}
	// One hyphenated string split into namespace and pool at each hyphen:
	// every split reads the same, vdi-<s>-<n>.
	for i := 0; i < 2000; i++ {
		s := randLabel(r, 60, lower, "ab-")
		for j := 1; j < len(s)-1; j++ {
			if s[j] != '-' || s[j-1] == '-' || s[j+1] == '-' || s[j+1] < 'a' {
				continue
			}
			ns, pool := s[:j], s[j+1:]
			if len(pool) > MaxPoolNameLength || len(ns) > 63 {
				continue
			}
			check(pair{ns, MemberName(pool, 1)})
			pairs++
		}
	}
	// Namespaces of 63 characters that differ only past the cut, with one
	// long member: their readable parts are all equal.
	base := strings.Repeat("n", 50)
	member := MemberName(strings.Repeat("m", MaxPoolNameLength), MaxPoolSize)
	for i := 0; i < 5000; i++ {
		check(pair{base + fmt.Sprintf("%013d", i), member})
		pairs++
	}
	if len(seen) < pairs/2 {
		t.Fatalf("only %d distinct names over %d pairs: the generator repeats itself", len(seen), pairs)
	}
	t.Logf("%d pairs, %d distinct, no collision", pairs, len(seen))
}

// A member whose Pod carries a VM name of the former scheme
// (vdi-<namespace>-<member>) keeps it: the annotation is no source field, so
// the member is not drifted, stays free, and a reconcile writes nothing for
// it. It gets the new name when it is next built (a release or a replace).
func TestCocoonOldVMNameIsNoDrift(t *testing.T) {
	e, f := newEngine()
	spec := baseSpec(2)
	spec.Runtime = &Runtime{Backend: BackendCocoon, Image: "ubuntu-dev-base"}
	spec.Default()
	seedPool(f, "desk", spec, 2)
	f.mu.Lock()
	f.pods["desk-1"].Annotations[CocoonAnnotationVMName] = "vdi-" + testNS + "-desk-1"
	f.mu.Unlock()
	snap, err := f.Snapshot(context.Background(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	v := Observe(snap, testNow)
	m := v.Member("desk-1")
	if m.Drift || !m.Free {
		t.Fatalf("a member with the former VM name: drift=%v free=%v, want no drift and free (problems %v)", m.Drift, m.Free, m.Problems)
	}
	f.reset()
	if _, err := e.Reconcile(context.Background(), "desk"); err != nil {
		t.Fatal(err)
	}
	if w := memberWrites(f.writes(), "desk-1"); len(w) > 0 {
		t.Fatalf("reconcile wrote %v for a member with the former VM name", w)
	}
	if got := f.pod("desk-1").Annotations[CocoonAnnotationVMName]; got != "vdi-vdi-desk-1" {
		t.Fatalf("VM name changed to %q", got)
	}
	// A release builds it again, with the new name.
	f.add(claimAt("desk", "desk-1", "alice", testNow.Add(-10*time.Minute)))
	if _, err := e.Release(context.Background(), "desk", "desk-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.pod("desk-1").Annotations[CocoonAnnotationVMName], CocoonVMName(testNS, "desk-1"); got != want || got == "vdi-vdi-desk-1" {
		t.Fatalf("VM name after release = %q, want %q", got, want)
	}
}
