package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestValidatePoolName(t *testing.T) {
	tests := []struct {
		name, pool string
		wantErr    string // substring; "" means valid
	}{
		{"simple", "desk", ""},
		{"with digits and dash", "desk-2a", ""},
		{"one letter", "d", ""},
		{"at the limit", strings.Repeat("a", MaxPoolNameLength), ""},
		{"empty", "", "must not be empty"},
		{"too long", strings.Repeat("a", MaxPoolNameLength+1), "at most 40 characters"},
		{"uppercase", "Desk", "lower case"},
		{"starts with digit", "1desk", "start with a letter"},
		{"ends with dash", "desk-", "end with a letter or digit"},
		{"dot", "desk.one", "lower case"},
		{"underscore", "desk_one", "lower case"},
		{"space", "desk one", "lower case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePoolName(tt.pool)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidatePoolName(%q) = %v, want nil", tt.pool, err)
				}
				return
			}
			var inv *InvalidError
			if !errors.As(err, &inv) || inv.Field != "pool" {
				t.Fatalf("ValidatePoolName(%q) = %v, want an *InvalidError on field pool", tt.pool, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidatePoolName(%q) = %q, want it to contain %q", tt.pool, err, tt.wantErr)
			}
		})
	}
}

// Every name derived from the longest valid pool and the largest index stays valid.
func TestPoolNameLimitKeepsDerivedNamesValid(t *testing.T) {
	pool := strings.Repeat("p", MaxPoolNameLength)
	member := MemberName(pool, MaxPoolSize)
	for _, n := range []string{member, PVCName(member), ConsoleServiceName(member), LeaseName(member)} {
		if msg := dns1123Subdomain(n); msg != "" {
			t.Errorf("%s: %s", n, msg)
		}
		if len(n) > 63 {
			t.Errorf("%s is %d characters, longer than a label", n, len(n))
		}
	}
	if msg := labelValue(member); msg != "" {
		t.Errorf("member label %s: %s", member, msg)
	}
	if msg := labelValue(ConfigMapName(pool)); msg != "" {
		t.Errorf("ConfigMap name %s: %s", ConfigMapName(pool), msg)
	}
}

func TestValidateIdentity(t *testing.T) {
	tests := []struct {
		name, identity string
		wantErr        string // substring; "" means valid
		reserved       bool
	}{
		{"email", "alice@example.com", "", false},
		{"inner spaces", "Alice Example", "", false},
		{"unicode letters", "zoë@example.com", "", false},
		{"at the limit", strings.Repeat("a", 253), "", false},
		{"empty", "", "must not be empty", false},
		{"254 characters", strings.Repeat("a", 254), "at most 253 characters (got 254)", false},
		{"253 two-byte characters", strings.Repeat("é", 253), "", false},
		{"254 two-byte characters", strings.Repeat("é", 254), "at most 253 characters (got 254)", false},
		{"ESC", "alice\x1b[31m", "U+001B", false},
		{"NUL", "alice\x00", "U+0000", false},
		{"newline", "alice\nbob", "U+000A", false},
		{"tab", "alice\tbob", "U+0009", false},
		{"DEL", "alice\x7f", "U+007F", false},
		{"C1 control", "alice\u0085", "U+0085", false},
		{"bidi override", "alice\u202egro.elpmaxe", "U+202E", false},
		{"zero width space", "ali\u200bce", "U+200B", false},
		{"invalid UTF-8", "alice\xff", "valid UTF-8", false},
		{"leading space", " alice", "white space", false},
		{"trailing space", "alice ", "white space", false},
		{"reserved reconciler", ReconcilerIdentity, "reserved for the reconciler", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateIdentity(tt.identity)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateIdentity(%q) = %v, want nil", tt.identity, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateIdentity(%q) = %v, want an error containing %q", tt.identity, err, tt.wantErr)
			}
			if got := errors.Is(err, ErrReservedIdentity); got != tt.reserved {
				t.Fatalf("errors.Is(err, ErrReservedIdentity) = %v, want %v", got, tt.reserved)
			}
			var inv *InvalidError
			if !tt.reserved && (!errors.As(err, &inv) || inv.Field != "identity") {
				t.Fatalf("error %v is not an *InvalidError on identity", err)
			}
			if inv != nil && strings.ContainsAny(err.Error(), "\x00\x1b\n\u202e") {
				t.Fatalf("error message %q echoes the control characters", err)
			}
		})
	}
}

func TestMemberIndex(t *testing.T) {
	tests := []struct {
		pool, member string
		want         int
		ok           bool
	}{
		{"desk", "desk-1", 1, true},
		{"desk", "desk-10", 10, true},
		{"desk", "desk-99999", 99999, true},
		{"desk-2", "desk-2-3", 3, true},
		{"desk", "desk-0", 0, false},
		{"desk", "desk-01", 0, false},
		{"desk", "desk-", 0, false},
		{"desk", "desk", 0, false},
		{"desk", "desk-a", 0, false},
		{"desk", "desk-1a", 0, false},
		{"desk", "desk--1", 0, false},
		{"desk", "desk-+1", 0, false},
		{"desk", "desk- 1", 0, false},
		{"desk", "desk-1-2", 0, false},
		{"desk", "desk-2-3", 0, false},
		{"desk", "other-1", 0, false},
		{"desk", "xdesk-1", 0, false},
		{"desk", "desk-99999999999999999999999", 0, false},
		{"desk", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.pool+"/"+tt.member, func(t *testing.T) {
			got, ok := MemberIndex(tt.pool, tt.member)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("MemberIndex(%q, %q) = %d, %v; want %d, %v", tt.pool, tt.member, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDerivedNames(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"ConfigMap", ConfigMapName("desk"), "corral-vdi-ctpool-desk"},
		{"member", MemberName("desk", 3), "desk-3"},
		{"PVC", PVCName("desk-3"), "desk-3-data"},
		{"console Service", ConsoleServiceName("desk-3"), "desk-3-console"},
		{"Lease", LeaseName("desk-3"), "corral-vdi-ct-desk-3"},
		{"cocoon VM", CocoonVMName("vdi", "desk-3"), "vdi-vdi-desk-3-a16c12f8cc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got %q, want %q", tt.got, tt.want)
			}
		})
	}

	reverse := []struct {
		name   string
		fn     func(string) (string, bool)
		in     string
		want   string
		wantOK bool
	}{
		{"pool of ConfigMap", PoolFromConfigMapName, "corral-vdi-ctpool-desk", "desk", true},
		{"pool of other ConfigMap", PoolFromConfigMapName, "kube-root-ca.crt", "", false},
		{"member of PVC", MemberFromPVCName, "desk-3-data", "desk-3", true},
		{"member of other PVC", MemberFromPVCName, "scratch", "scratch", false},
		{"member of Lease", MemberFromLeaseName, "corral-vdi-ct-desk-3", "desk-3", true},
		{"member of other Lease", MemberFromLeaseName, "kube-scheduler", "kube-scheduler", false},
	}
	for _, tt := range reverse {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.fn(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// One rule says which ConfigMap defines a pool, for every reader.
func TestDefinedPool(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"corral-vdi-ctpool-desk", map[string]string{LabelPool: "desk"}, "desk"},
		{"corral-vdi-ctpool-desk", map[string]string{LabelPool: "kiosk"}, ""},
		{"corral-vdi-ctpool-desk", nil, ""},
		{"desk-settings", map[string]string{LabelPool: "desk"}, ""},
		{"corral-vdi-ctpool-Desk_1", map[string]string{LabelPool: "Desk_1"}, ""},
		{"corral-vdi-ctpool-", map[string]string{LabelPool: ""}, ""},
	} {
		t.Run(tc.name+"/"+tc.labels[LabelPool], func(t *testing.T) {
			got, ok := DefinedPool(tc.name, tc.labels)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("DefinedPool = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
