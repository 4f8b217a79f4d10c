package kubetest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNamespaceName(t *testing.T) {
	cases := map[string]string{
		"TestPlane":                       "testplane-",
		"TestPlane/sub_test#01":           "testplane-sub-test-01-",
		"TestX/---weird   NAME---":        "testx-weird-name-",
		"__":                              "test-",
		"":                                "test-",
		strings.Repeat("Abc/", 40):        "abc-abc-",
		"TestIntegration/ünïcode/Ω":       "testintegration-n-code-",
		"TestIntegration/trailing-dash--": "testintegration-trailing-dash-",
	}
	for in, prefix := range cases {
		got := NamespaceName(in)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("NamespaceName(%q) = %q: not a DNS-1123 label: %v", in, got, errs)
		}
		if !strings.HasPrefix(got, prefix) {
			t.Errorf("NamespaceName(%q) = %q, want prefix %q", in, got, prefix)
		}
		if len(got) > 63 {
			t.Errorf("NamespaceName(%q) = %q: %d characters", in, got, len(got))
		}
	}
	if a, b := NamespaceName("TestSame"), NamespaceName("TestSame"); a == b {
		t.Errorf("two namespaces for one test share the name %q", a)
	}
}

func TestRequireSkipsWithoutPlane(t *testing.T) {
	t.Setenv(DirEnv, t.TempDir())
	t.Setenv("CI", "")
	skipped := false
	// Run Require in a subtest: a skip ends only that subtest.
	t.Run("require", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Require(t)
		t.Error("Require returned without a plane")
	})
	if !skipped {
		t.Fatal("Require did not skip the test without a plane")
	}
}
