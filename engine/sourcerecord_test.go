package engine

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Every backend's source record decodes into a spec with the same source
// hash and the Pod built from it equals the pool's own; the PVC carries the
// record.
func TestSourceRecordRoundTrip(t *testing.T) {
	specs := backendSpecs()
	quantities := Spec{Image: "ghcr.io/example/desktop:1", CPU: "1000m", Memory: "2048Mi", Disk: "5120Mi", StorageClass: "fast", Size: 2}
	quantities.Default()
	specs["canonical quantities"] = quantities
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			rec := spec.SourceRecord()
			pvc := BuildPVC(testNS, "desk", 1, spec)
			if pvc.Annotations[AnnotationSource] != rec || pvc.Labels[LabelSource] != spec.SourceHash() {
				t.Fatalf("PVC records %q labelled %s", pvc.Annotations[AnnotationSource], pvc.Labels[LabelSource])
			}
			pool := baseSpec(7)
			got, err := SpecFromSourceRecord(rec, pool, spec.SourceHash())
			if err != nil {
				t.Fatal(err)
			}
			if got.Size != 7 || got.SourceHash() != spec.SourceHash() {
				t.Fatalf("decoded size %d hash %s, want 7 %s", got.Size, got.SourceHash(), spec.SourceHash())
			}
			a, _ := yaml.Marshal(BuildPod(testNS, "desk", 1, spec))
			b, _ := yaml.Marshal(BuildPod(testNS, "desk", 1, got))
			if string(a) != string(b) {
				t.Fatalf("the Pod built from the record differs:\n%s\nwant\n%s", b, a)
			}
			if p := SourceRecordProblem(pvc); p != "" {
				t.Fatalf("problem %q", p)
			}
		})
	}
}

// The record stays far below the API server's 256 KiB limit on annotations:
// Validate refuses a spec whose source fields encode longer than
// MaxSourceRecordBytes, and a record that long is refused when read.
func TestSourceRecordIsBounded(t *testing.T) {
	if MaxSourceRecordBytes*8 > 256<<10 {
		t.Fatalf("MaxSourceRecordBytes %d is not well under 256 KiB", MaxSourceRecordBytes)
	}
	long := func(n int) Spec {
		s := Spec{Image: "ghcr.io/" + strings.Repeat("a", n), Size: 1,
			Runtime: &Runtime{Backend: BackendSandboxd, Template: "ghcr.io/" + strings.Repeat("t", n), TTLSeconds: ttl(86400)}}
		s.Default()
		return s
	}
	ok := long(MaxSourceRecordBytes/2 - 200)
	if err := ok.Validate(); err != nil {
		t.Fatalf("a spec whose record is %d bytes is refused: %v", len(ok.SourceRecord()), err)
	}
	if n := len(ok.SourceRecord()); n > MaxSourceRecordBytes {
		t.Fatalf("record of an accepted spec is %d bytes", n)
	}
	tooLong := long(MaxSourceRecordBytes / 2)
	err := tooLong.Validate()
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("a spec whose record is %d bytes: Validate = %v", len(tooLong.SourceRecord()), err)
	}
	if _, err := ParseSpec(tooLong.Encode()); err == nil {
		t.Fatal("ParseSpec accepted it")
	}
	if _, err := SpecFromSourceRecord(tooLong.SourceRecord(), baseSpec(1), ""); err == nil {
		t.Fatal("a record longer than the bound was decoded")
	}
	// The spec of every golden backend records well under a kilobyte.
	for name, s := range backendSpecs() {
		if n := len(s.SourceRecord()); n > 1024 {
			t.Errorf("%s records %d bytes", name, n)
		}
	}
}

func FuzzSpecFromSourceRecord(f *testing.F) {
	for _, s := range backendSpecs() {
		f.Add(s.SourceRecord())
	}
	f.Add(`{"image":`)
	f.Add(`{"image":"x","runtime":{"backend":"cocoon"}}`)
	f.Fuzz(func(t *testing.T, rec string) {
		s, err := SpecFromSourceRecord(rec, baseSpec(1), "")
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded an invalid spec: %v", err)
		}
		if _, err := SpecFromSourceRecord(s.SourceRecord(), baseSpec(1), s.SourceHash()); err != nil {
			t.Fatalf("the decoded spec's own record does not decode: %v", err)
		}
	})
}
