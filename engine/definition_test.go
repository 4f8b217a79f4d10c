package engine

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDefinitionCache(t *testing.T) {
	cm := func(uid, rv, spec, status string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName("p"), UID: types.UID(uid), ResourceVersion: rv},
			Data:       map[string]string{KeySpec: spec, KeyStatus: status},
		}
	}
	const good = "image: registry.example/desk:1\nsize: 3\nruntime:\n  backend: sandboxd\n  template: desk\n  ttlSeconds: 60\n"
	const status = "desired: 3\nerrors: [boom]\nmembers:\n- name: p-1\n  state: Ready\nupdatedAt: 2026-12-01T10:00:00Z\n"
	cases := []struct {
		name string
		cm   *corev1.ConfigMap
	}{
		{"a definition", cm("u1", "7", good, status)},
		{"no status", cm("u1", "", good, "")},
		{"empty spec", cm("", "7", "", status)},
		{"a spec that does not parse keeps the size", cm("u2", "1", "image: x\nsize: 2\nbogus: 1\n", "")},
		{"a status that does not parse", cm("u3", "1", good, "desired: [\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &definitionCache{}
			want := parseUncached(tc.cm)
			for round := range 3 { // a miss, then hits
				got := c.parse(tc.cm)
				if describe(got) != describe(want) {
					t.Fatalf("round %d:\n got %s\nwant %s", round, describe(got), describe(want))
				}
				// A caller that changes what it got changes nothing cached.
				if got.spec.Runtime != nil {
					*got.spec.Runtime.TTLSeconds = -1
					got.spec.Runtime.Template = "changed"
				}
				if len(got.rec.Members) > 0 {
					got.rec.Members[0].Name = "changed"
				}
				if len(got.rec.Errors) > 0 {
					got.rec.Errors[0] = "changed"
				}
				if got.rec.UpdatedAt != nil {
					*got.rec.UpdatedAt = time.Time{}
				}
			}
			if n := len(c.entries); n != 1 {
				t.Errorf("%d entries cached, want 1", n)
			}
		})
	}
}

// A write that keeps the resourceVersion (as fake clients do) is still seen.
func TestDefinitionCacheNewTextParsesAgain(t *testing.T) {
	c := &definitionCache{}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: "1"},
		Data:       map[string]string{KeySpec: "image: a\nsize: 1\n"},
	}
	if got := c.parse(cm).spec.Size; got != 1 {
		t.Fatalf("size %d", got)
	}
	cm = cm.DeepCopy()
	cm.Data[KeySpec] = "image: a\nsize: 5\n"
	if got := c.parse(cm).spec.Size; got != 5 {
		t.Errorf("after a write: size %d, want 5", got)
	}
}

func TestDefinitionCacheIsBounded(t *testing.T) {
	c := &definitionCache{}
	for i := range definitionCacheSize + 10 {
		c.parse(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprint(i)), ResourceVersion: "1"},
			Data:       map[string]string{KeySpec: fmt.Sprintf("image: a\nsize: %d\n", i)},
		})
		if len(c.entries) > definitionCacheSize {
			t.Fatalf("%d entries after %d definitions", len(c.entries), i+1)
		}
	}
}

// parseUncached is what the cache must answer: the definition parsed afresh.
func parseUncached(cm *corev1.ConfigMap) parsedDefinition {
	var d parsedDefinition
	spec, err := ParseSpec(cm.Data[KeySpec])
	if err != nil {
		d.specErr, d.spec = err, lenientSpec(cm.Data[KeySpec])
	} else {
		d.spec, d.source = spec, spec.SourceHash()
	}
	d.rec, d.recordErr = ParseStatus(cm.Data[KeyStatus])
	return d
}

// describe prints a parsed definition by value (errors by their text,
// pointers by what they point to).
func describe(d parsedDefinition) string {
	errText := func(err error) string {
		if err == nil {
			return "<nil>"
		}
		return err.Error()
	}
	rt, ttl := "<nil>", "<nil>"
	if d.spec.Runtime != nil {
		r := *d.spec.Runtime
		if r.TTLSeconds != nil {
			ttl = fmt.Sprint(*r.TTLSeconds)
		}
		r.TTLSeconds = nil
		rt = fmt.Sprintf("%+v", r)
	}
	at := "<nil>"
	if d.rec.UpdatedAt != nil {
		at = d.rec.UpdatedAt.String()
	}
	spec, rec := d.spec, d.rec
	spec.Runtime, rec.UpdatedAt = nil, nil
	return fmt.Sprintf("%+v rt=%s ttl=%s specErr=%s source=%s rec=%+v at=%s recErr=%s",
		spec, rt, ttl, errText(d.specErr), d.source, rec, at, errText(d.recordErr))
}
