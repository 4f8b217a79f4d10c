package engine

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func int64p(v int64) *int64 { return &v }

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    Spec   // compared when wantErr is ""
		wantErr string // substring of the error
		field   string // the *InvalidError field, when one is expected
	}{
		{
			name: "defaults filled",
			yaml: "image: ghcr.io/example/desktop:1\nsize: 3\n",
			want: Spec{Image: "ghcr.io/example/desktop:1", CPU: "1", Memory: "2Gi", Disk: "5Gi", Mode: ModeEphemeral, Size: 3, Runtime: &Runtime{Backend: BackendStandard}},
		},
		{
			name: "every field",
			yaml: "image: img:2\ncpu: 500m\nmemory: 4Gi\ndisk: 20Gi\nstorageClass: fast-ssd\nprivileged: true\ninit: true\nmode: ephemeral\nsize: 0\nruntime:\n  backend: standard\n  runtimeClassName: kata\n",
			want: Spec{Image: "img:2", CPU: "500m", Memory: "4Gi", Disk: "20Gi", StorageClass: "fast-ssd", Privileged: true, Init: true, Mode: ModeEphemeral, Runtime: &Runtime{Backend: BackendStandard, RuntimeClassName: "kata"}},
		},
		{
			name: "YAML numbers for quantities",
			yaml: "image: img\ncpu: 2\nsize: 1\n",
			want: Spec{Image: "img", CPU: "2", Memory: "2Gi", Disk: "5Gi", Mode: ModeEphemeral, Size: 1, Runtime: &Runtime{Backend: BackendStandard}},
		},
		{
			name: "JSON",
			yaml: `{"image":"img","size":2}`,
			want: Spec{Image: "img", CPU: "1", Memory: "2Gi", Disk: "5Gi", Mode: ModeEphemeral, Size: 2, Runtime: &Runtime{Backend: BackendStandard}},
		},
		{name: "empty", yaml: "  \n", wantErr: "is empty", field: "spec"},
		{name: "malformed YAML", yaml: "image: [unclosed\n", wantErr: "invalid spec", field: "spec"},
		{name: "not a mapping", yaml: "- a\n- b\n", wantErr: "invalid spec", field: "spec"},
		{name: "unknown field", yaml: "image: img\nsize: 1\nreplicas: 3\n", wantErr: `unknown field "replicas"`, field: "spec"},
		{name: "unknown runtime field", yaml: "image: img\nruntime:\n  backend: sandboxd\n  template: t\n  warm: 3\n", wantErr: `unknown field "warm"`, field: "spec"},
		{name: "wrong type", yaml: "image: img\nsize: three\n", wantErr: "size", field: "spec"},
		{name: "duplicate key", yaml: "image: a\nimage: b\n", wantErr: "image", field: "spec"},
		{name: "missing image", yaml: "size: 1\n", wantErr: "image: is required", field: "image"},
		{name: "image with space", yaml: "image: \"img 1\"\n", wantErr: "white space", field: "image"},
		{name: "image with control character", yaml: "image: \"img\\e\"\n", wantErr: "control characters", field: "image"},
		{name: "negative size", yaml: "image: img\nsize: -1\n", wantErr: `invalid size "-1": must not be negative`, field: "size"},
		{name: "size too large", yaml: "image: img\nsize: 100000\n", wantErr: "at most 99999", field: "size"},
		{name: "bad cpu quantity", yaml: "image: img\ncpu: lots\n", wantErr: `invalid cpu "lots": is not a quantity`, field: "cpu"},
		{name: "bad memory quantity", yaml: "image: img\nmemory: 2GB\n", wantErr: `invalid memory "2GB"`, field: "memory"},
		{name: "bad disk quantity", yaml: "image: img\ndisk: big\n", wantErr: `invalid disk "big"`, field: "disk"},
		{name: "zero cpu", yaml: "image: img\ncpu: \"0\"\n", wantErr: `invalid cpu "0": must be greater than zero`, field: "cpu"},
		{name: "zero memory", yaml: "image: img\nmemory: 0Gi\n", wantErr: "must be greater than zero", field: "memory"},
		{name: "negative disk", yaml: "image: img\ndisk: -5Gi\n", wantErr: "must be greater than zero", field: "disk"},
		{name: "bad storage class", yaml: "image: img\nstorageClass: Fast_SSD\n", wantErr: "invalid storageClass", field: "storageClass"},
		{name: "unknown mode", yaml: "image: img\nmode: sticky\n", wantErr: "must be ephemeral", field: "mode"},
		{name: "restricted defaults its user", yaml: "image: img\npodSecurity: restricted\n",
			want: Spec{Image: "img", CPU: "1", Memory: "2Gi", Disk: "5Gi", Mode: ModeEphemeral, PodSecurity: PodSecurityRestricted, RunAsUser: DefaultRunAsUser, Runtime: &Runtime{Backend: BackendStandard}}},
		{name: "restricted with its user", yaml: "image: img\npodSecurity: restricted\nrunAsUser: 4242\n",
			want: Spec{Image: "img", CPU: "1", Memory: "2Gi", Disk: "5Gi", Mode: ModeEphemeral, PodSecurity: PodSecurityRestricted, RunAsUser: 4242, Runtime: &Runtime{Backend: BackendStandard}}},
		{name: "podSecurity privileged implies privileged", yaml: "image: img\npodSecurity: privileged\n",
			want: Spec{Image: "img", CPU: "1", Memory: "2Gi", Disk: "5Gi", Mode: ModeEphemeral, Privileged: true, Runtime: &Runtime{Backend: BackendStandard}}},
		{name: "unknown level", yaml: "image: img\npodSecurity: strict\n", wantErr: `invalid podSecurity "strict": must be one of privileged, baseline, restricted`, field: "podSecurity"},
		{name: "privileged with baseline", yaml: "image: img\nprivileged: true\npodSecurity: baseline\n", wantErr: "the baseline level refuses a privileged container", field: "podSecurity"},
		{name: "privileged with restricted", yaml: "image: img\nprivileged: true\npodSecurity: restricted\n", wantErr: "the restricted level refuses a privileged container", field: "podSecurity"},
		{name: "restricted as root", yaml: "image: img\npodSecurity: restricted\nrunAsUser: -1\n", wantErr: `invalid runAsUser "-1"`, field: "runAsUser"},
		{name: "restricted user too large", yaml: "image: img\npodSecurity: restricted\nrunAsUser: 2147483648\n", wantErr: "must be a user id from 1", field: "runAsUser"},
		{name: "runAsUser on baseline", yaml: "image: img\nrunAsUser: 1000\n", wantErr: "applies only to podSecurity restricted (this pool is baseline)", field: "runAsUser"},
		{name: "runAsUser on privileged", yaml: "image: img\nprivileged: true\nrunAsUser: 1000\n", wantErr: "(this pool is privileged)", field: "runAsUser"},
		{name: "non-integer ttl", yaml: "image: img\nruntime:\n  backend: sandboxd\n  template: img\n  ttlSeconds: 1.5\n", wantErr: "ttlSeconds", field: "spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSpec(tt.yaml)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseSpec: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("ParseSpec =\n%#v\nwant\n%#v", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseSpec error = %v, want one containing %q", err, tt.wantErr)
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != tt.field {
				t.Fatalf("ParseSpec error %v (%T), want an *InvalidError on %q", err, err, tt.field)
			}
			if !reflect.DeepEqual(got, Spec{}) {
				t.Fatalf("ParseSpec returned %#v with its error, want the zero Spec", got)
			}
		})
	}
}

func TestParseSpecPersistentMode(t *testing.T) {
	_, err := ParseSpec("image: img\nmode: persistent\nsize: 2\n")
	if !errors.Is(err, ErrPersistentMode) {
		t.Fatalf("ParseSpec = %v, want ErrPersistentMode", err)
	}
	if !strings.Contains(err.Error(), "use a VM pool") {
		t.Fatalf("error %q does not point to VM pools", err)
	}
}

func TestSpecEncodeParseRoundTrip(t *testing.T) {
	specs := map[string]Spec{
		"minimal":          {Image: "img", Size: 1},
		"size zero":        {Image: "img"},
		"everything":       {Image: "img:2", CPU: "250m", Memory: "1536Mi", Disk: "1Ti", StorageClass: "fast", Privileged: true, Init: true, Size: 7},
		"kata":             {Image: "img", Size: 1, Runtime: &Runtime{RuntimeClassName: "kata"}},
		"sandboxd":         {Image: "img", Size: 2, Runtime: &Runtime{Backend: BackendSandboxd, Template: "img", Net: "egress", Size: "large", TTLSeconds: int64p(0)}},
		"cocoon":           {Image: "img", Size: 2, Runtime: &Runtime{Backend: BackendCocoon, Image: "ubuntu-dev-base", Mode: CocoonModeClone, OS: "windows", Pool: "gpu"}},
		"restricted":       {Image: "img", Size: 2, PodSecurity: PodSecurityRestricted, RunAsUser: 4242},
		"privileged level": {Image: "img", Size: 2, PodSecurity: PodSecurityPrivileged},
		"pull secrets":     {Image: "img", Size: 2, ImagePullSecrets: []string{"regcred", "mirror.example"}},
	}
	for name, s := range specs {
		t.Run(name, func(t *testing.T) {
			s.Default()
			enc := s.Encode()
			got, err := ParseSpec(enc)
			if err != nil {
				t.Fatalf("ParseSpec(Encode()) = %v\n%s", err, enc)
			}
			if !reflect.DeepEqual(got, s) {
				t.Fatalf("round trip changed the spec:\n got %#v\nwant %#v", got, s)
			}
			if got.Encode() != enc {
				t.Fatalf("encoding is not stable:\n%s\n---\n%s", enc, got.Encode())
			}
			if got.SourceHash() != s.SourceHash() {
				t.Fatalf("source hash changed in the round trip")
			}
		})
	}
}

func TestSourceHash(t *testing.T) {
	base := baseSpec(3)
	h := base.SourceHash()
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(h) {
		t.Fatalf("SourceHash = %q, want 16 hex characters", h)
	}
	if h2 := base.SourceHash(); h2 != h {
		t.Fatalf("SourceHash not stable: %q then %q", h, h2)
	}

	change := map[string]func(*Spec){
		"image":                  func(s *Spec) { s.Image = "ghcr.io/example/desktop:2" },
		"cpu":                    func(s *Spec) { s.CPU = "2" },
		"memory":                 func(s *Spec) { s.Memory = "4Gi" },
		"disk":                   func(s *Spec) { s.Disk = "10Gi" },
		"storageClass":           func(s *Spec) { s.StorageClass = "fast" },
		"privileged":             func(s *Spec) { s.Privileged = true },
		"init":                   func(s *Spec) { s.Init = true },
		"runtime backend":        func(s *Spec) { s.Runtime = &Runtime{Backend: BackendSandboxd, Template: s.Image} },
		"runtime class":          func(s *Spec) { s.Runtime = &Runtime{Backend: BackendStandard, RuntimeClassName: "kata"} },
		"sandboxd net":           func(s *Spec) { s.Runtime = &Runtime{Backend: BackendSandboxd, Template: s.Image, Net: "egress"} },
		"cocoon image":           func(s *Spec) { s.Runtime = &Runtime{Backend: BackendCocoon, Image: "other"} },
		"podSecurity restricted": func(s *Spec) { s.PodSecurity = PodSecurityRestricted },
		"sandboxd ttl set": func(s *Spec) {
			s.Runtime = &Runtime{Backend: BackendSandboxd, Template: s.Image, TTLSeconds: int64p(0)}
		},
	}
	for name, mutate := range change {
		t.Run("changes with "+name, func(t *testing.T) {
			s := baseSpec(3)
			mutate(&s)
			if s.SourceHash() == h {
				t.Fatalf("SourceHash did not change with %s", name)
			}
		})
	}

	same := map[string]func(*Spec){
		"size":                   func(s *Spec) { s.Size = 99 },
		"size zero":              func(s *Spec) { s.Size = 0 },
		"mode":                   func(s *Spec) { s.Mode = ModePersistent },
		"mode unset":             func(s *Spec) { s.Mode = "" },
		"2048Mi is 2Gi":          func(s *Spec) { s.Memory = "2048Mi" },
		"1000m is 1":             func(s *Spec) { s.CPU = "1000m" },
		"defaults omitted":       func(s *Spec) { s.CPU, s.Memory, s.Disk = "", "", "" },
		"runtime omitted":        func(s *Spec) { s.Runtime = nil },
		"runtime empty":          func(s *Spec) { s.Runtime = &Runtime{} },
		"runtime explicit":       func(s *Spec) { s.Runtime = &Runtime{Backend: BackendStandard} },
		"5120Mi disk is default": func(s *Spec) { s.Disk = "5120Mi" },
		"podSecurity baseline":   func(s *Spec) { s.PodSecurity = PodSecurityBaseline },
		"podSecurity defaulted":  func(s *Spec) { s.Default() },
	}
	for name, mutate := range same {
		t.Run("same with "+name, func(t *testing.T) {
			s := baseSpec(3)
			mutate(&s)
			if got := s.SourceHash(); got != h {
				t.Fatalf("SourceHash = %q, want %q", got, h)
			}
		})
	}

	t.Run("cocoon defaults hash like explicit ones", func(t *testing.T) {
		a := Spec{Image: "img", Runtime: &Runtime{Backend: BackendCocoon, Image: "base"}}
		b := Spec{Image: "img", Runtime: &Runtime{Backend: BackendCocoon, Image: "base", Pool: CocoonDefaultPool, Mode: CocoonModeRun, OS: CocoonDefaultOS}}
		if a.SourceHash() != b.SourceHash() {
			t.Fatal("defaulted cocoon runtime hashes differently from the explicit one")
		}
		if a.Runtime.Pool != "" {
			t.Fatal("SourceHash modified the spec's runtime")
		}
	})
}

// TestSourceHashPinned: the hashes of pools of their default Pod Security
// level are those computed before podSecurity existed, so that no running
// member drifts on an upgrade; a restricted pool's user is a source field.
func TestSourceHashPinned(t *testing.T) {
	specs := backendSpecs()
	pinned := map[string]string{ // computed before podSecurity was a field
		"cocoon":          "d65ed4726d611b53",
		"kata":            "235196abedd10dcd",
		"privileged":      "3a4828942cb85033",
		"privileged-init": "9662c2cf66d8113b",
		"sandboxd":        "abe64e95b91ab8a2",
		"standard":        "50e930017164799e",
	}
	for name, want := range pinned {
		s := specs[name]
		if got := s.SourceHash(); got != want {
			t.Errorf("%s: SourceHash = %s, want %s (the hash before podSecurity)", name, got, want)
		}
		if strings.Contains(s.SourceRecord(), "podSecurity") || strings.Contains(s.SourceRecord(), "runAsUser") {
			t.Errorf("%s: record %s names a default level", name, s.SourceRecord())
		}
	}
	std := specs["standard"]
	if got, want := std.SourceRecord(), `{"image":"ghcr.io/example/desktop:1","cpu":"1","memory":"2Gi","disk":"5Gi","storageClass":"","privileged":false,"init":false,"runtime":{"backend":"standard"}}`; got != want {
		t.Errorf("standard record = %s, want %s", got, want)
	}
	r := std
	r.PodSecurity = PodSecurityRestricted
	r.Default()
	if !strings.Contains(r.SourceRecord(), `"podSecurity":"restricted","runAsUser":1000`) {
		t.Errorf("restricted record = %s, want the level and user", r.SourceRecord())
	}
	other := r
	other.RunAsUser = 2000
	if other.SourceHash() == r.SourceHash() {
		t.Error("a restricted pool's runAsUser does not change its hash")
	}
}

func TestRuntimeValidate(t *testing.T) {
	tests := []struct {
		name    string
		rt      Runtime
		field   string // "" means valid
		wantErr string
	}{
		{name: "standard default", rt: Runtime{}},
		{name: "standard explicit", rt: Runtime{Backend: BackendStandard}},
		{name: "standard runtime class", rt: Runtime{Backend: BackendStandard, RuntimeClassName: "kata-qemu"}},
		{name: "sandboxd minimal", rt: Runtime{Backend: BackendSandboxd, Template: "img"}},
		{name: "sandboxd full", rt: Runtime{Backend: BackendSandboxd, Template: "img", Net: "none", Size: "medium", TTLSeconds: int64p(86400)}},
		{name: "sandboxd egress small ttl 0", rt: Runtime{Backend: BackendSandboxd, Template: "img", Net: "egress", Size: "small", TTLSeconds: int64p(0)}},
		{name: "cocoon minimal", rt: Runtime{Backend: BackendCocoon, Image: "ubuntu"}},
		{name: "cocoon clone macos", rt: Runtime{Backend: BackendCocoon, Image: "ubuntu", Pool: "gpu", Mode: CocoonModeClone, OS: "macos"}},
		{name: "cocoon run windows", rt: Runtime{Backend: BackendCocoon, Image: "win11", Mode: CocoonModeRun, OS: "windows"}},

		{name: "unknown backend", rt: Runtime{Backend: "firecracker"}, field: "runtime.backend", wantErr: "must be one of standard, sandboxd, cocoon"},
		{name: "bad runtime class", rt: Runtime{RuntimeClassName: "Kata_QEMU"}, field: "runtime.runtimeClassName"},
		{name: "standard with template", rt: Runtime{Template: "img"}, field: "runtime.template", wantErr: "not used by backend standard"},
		{name: "standard with cocoon image", rt: Runtime{Backend: BackendStandard, Image: "x"}, field: "runtime.image", wantErr: "not used by backend standard"},
		{name: "standard with ttl", rt: Runtime{TTLSeconds: int64p(5)}, field: "runtime.ttlSeconds"},
		{name: "sandboxd missing template", rt: Runtime{Backend: BackendSandboxd}, field: "runtime.template", wantErr: "is required for backend sandboxd"},
		{name: "sandboxd negative ttl", rt: Runtime{Backend: BackendSandboxd, Template: "img", TTLSeconds: int64p(-1)}, field: "runtime.ttlSeconds", wantErr: "must not be negative"},
		{name: "sandboxd unknown net", rt: Runtime{Backend: BackendSandboxd, Template: "img", Net: "internet"}, field: "runtime.net", wantErr: "must be one of [none egress]"},
		{name: "sandboxd unknown size", rt: Runtime{Backend: BackendSandboxd, Template: "img", Size: "huge"}, field: "runtime.size", wantErr: "must be one of [small medium large]"},
		{name: "sandboxd with runtime class", rt: Runtime{Backend: BackendSandboxd, Template: "img", RuntimeClassName: "kata"}, field: "runtime.runtimeClassName", wantErr: "not used by backend sandboxd"},
		{name: "sandboxd with cocoon image", rt: Runtime{Backend: BackendSandboxd, Template: "img", Image: "x"}, field: "runtime.image", wantErr: "not used by backend sandboxd"},
		{name: "cocoon missing image", rt: Runtime{Backend: BackendCocoon}, field: "runtime.image", wantErr: "is required for backend cocoon"},
		{name: "cocoon unknown mode", rt: Runtime{Backend: BackendCocoon, Image: "u", Mode: "fork"}, field: "runtime.mode", wantErr: "must be one of [run clone]"},
		{name: "cocoon unknown os", rt: Runtime{Backend: BackendCocoon, Image: "u", OS: "plan9"}, field: "runtime.os", wantErr: "must be one of [linux windows macos]"},
		{name: "cocoon bad pool", rt: Runtime{Backend: BackendCocoon, Image: "u", Pool: "not a label"}, field: "runtime.pool"},
		{name: "cocoon with template", rt: Runtime{Backend: BackendCocoon, Image: "u", Template: "img"}, field: "runtime.template", wantErr: "not used by backend cocoon"},
		{name: "cocoon with runtime class", rt: Runtime{Backend: BackendCocoon, Image: "u", RuntimeClassName: "kata"}, field: "runtime.runtimeClassName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := tt.rt
			err := rt.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != tt.field {
				t.Fatalf("Validate = %v, want an *InvalidError on %s", err, tt.field)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %q, want it to contain %q", err, tt.wantErr)
			}
			// The spec path reports the same error.
			s := Spec{Image: "img", Size: 1, Runtime: &rt}
			s.Default()
			if serr := s.Validate(); serr == nil || !strings.Contains(serr.Error(), tt.field) {
				t.Fatalf("Spec.Validate = %v, want an error on %s", serr, tt.field)
			}
		})
	}
}

func TestSpecWarnings(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want int
	}{
		{"standard", Spec{Image: "img"}, 0},
		{"sandboxd template equals image", Spec{Image: "img", Runtime: &Runtime{Backend: BackendSandboxd, Template: "img"}}, 0},
		{"sandboxd template differs", Spec{Image: "img", Runtime: &Runtime{Backend: BackendSandboxd, Template: "other"}}, 1},
		{"cocoon image differs", Spec{Image: "img", Runtime: &Runtime{Backend: BackendCocoon, Image: "other"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.spec.Warnings()
			if len(w) != tt.want {
				t.Fatalf("Warnings = %q, want %d", w, tt.want)
			}
			if tt.want == 1 && !strings.Contains(w[0], `runtime.template "other" differs from image "img"`) {
				t.Fatalf("warning %q does not name template and image", w[0])
			}
		})
	}
}

func TestBackendName(t *testing.T) {
	for _, tt := range []struct {
		rt   *Runtime
		want string
	}{
		{nil, BackendStandard},
		{&Runtime{}, BackendStandard},
		{&Runtime{Backend: BackendSandboxd}, BackendSandboxd},
		{&Runtime{Backend: BackendCocoon}, BackendCocoon},
	} {
		if got := (Spec{Runtime: tt.rt}).BackendName(); got != tt.want {
			t.Errorf("BackendName(%+v) = %q, want %q", tt.rt, got, tt.want)
		}
	}
}

// A defaulted spec names no level it did not choose: setting Privileged on
// it (a caller, or privileged: true added to a stored definition by hand)
// makes a privileged pool, not one in conflict with a baseline nobody gave.
func TestDefaultLeavesTheDefaultLevelUnwritten(t *testing.T) {
	s, err := ParseSpec("image: img\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.PodSecurity != "" || s.PodSecurityLevel() != PodSecurityBaseline {
		t.Fatalf("defaulted: podSecurity %q, level %q; want none written and baseline", s.PodSecurity, s.PodSecurityLevel())
	}
	if strings.Contains(s.Encode(), "podSecurity") {
		t.Fatalf("the stored definition names the default level:\n%s", s.Encode())
	}
	s.Privileged = true
	s.Default()
	if err := s.Validate(); err != nil {
		t.Fatalf("privileged on a defaulted spec: %v", err)
	}
	if s.PodSecurityLevel() != PodSecurityPrivileged {
		t.Fatalf("level %q, want privileged", s.PodSecurityLevel())
	}
	edited, err := ParseSpec(strings.TrimSpace(Spec{Image: "img", Size: 1}.Encode()) + "\nprivileged: true\n")
	if err != nil || edited.PodSecurityLevel() != PodSecurityPrivileged {
		t.Fatalf("a stored definition edited to privileged: true: %v, level %q", err, edited.PodSecurityLevel())
	}
}
