package main

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ctpool-tui/ctpool-tui/engine"
)

// applySpec parses args as apply's flags and merges them onto cur.
func applySpec(t *testing.T, cur *engine.Spec, args ...string) (engine.Spec, error) {
	t.Helper()
	var f applyFlags
	c := &cobra.Command{Use: "apply"}
	f.register(c)
	if err := c.ParseFlags(args); err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	return f.spec(c, cur)
}

func storedSpec(s engine.Spec) *engine.Spec {
	s.Default()
	return &s
}

func TestApplyFlagsPodSecurity(t *testing.T) {
	restricted := storedSpec(engine.Spec{Image: "img", Size: 1, PodSecurity: engine.PodSecurityRestricted, RunAsUser: 4242})
	privileged := storedSpec(engine.Spec{Image: "img", Size: 1, Privileged: true})
	baseline := storedSpec(engine.Spec{Image: "img", Size: 1})
	tests := []struct {
		name       string
		cur        *engine.Spec
		args       []string
		level      string
		privileged bool
		user       int64
		wantErr    string // "" = no error
		usage      bool   // the error is a usage error
	}{
		{name: "new pool: baseline", args: []string{"--image", "img"}, level: engine.PodSecurityBaseline},
		{name: "new pool: --privileged", args: []string{"--image", "img", "--privileged"}, level: engine.PodSecurityPrivileged, privileged: true},
		{name: "new pool: --pod-security privileged", args: []string{"--image", "img", "--pod-security", "privileged"}, level: engine.PodSecurityPrivileged, privileged: true},
		{name: "new pool: restricted", args: []string{"--image", "img", "--pod-security", "restricted"}, level: engine.PodSecurityRestricted, user: 1000},
		{name: "new pool: restricted with a user", args: []string{"--image", "img", "--pod-security", "restricted", "--run-as-user", "5000"}, level: engine.PodSecurityRestricted, user: 5000},
		{name: "both flags agree", args: []string{"--image", "img", "--privileged", "--pod-security", "privileged"}, level: engine.PodSecurityPrivileged, privileged: true},
		{name: "--privileged with baseline", args: []string{"--image", "img", "--privileged", "--pod-security", "baseline"},
			wantErr: "--privileged=true conflicts with --pod-security baseline: --privileged means --pod-security privileged", usage: true},
		{name: "--privileged=false with privileged", args: []string{"--image", "img", "--privileged=false", "--pod-security", "privileged"},
			wantErr: "--privileged=false conflicts with --pod-security privileged", usage: true},
		{name: "unknown level", args: []string{"--image", "img", "--pod-security", "strict"},
			wantErr: `invalid podSecurity "strict": must be one of privileged, baseline, restricted`, usage: true},
		{name: "--run-as-user without restricted", args: []string{"--image", "img", "--run-as-user", "1000"},
			wantErr: `invalid runAsUser "1000": applies only to podSecurity restricted (this pool is baseline)`, usage: true},
		{name: "--run-as-user 0 on restricted is the default", args: []string{"--image", "img", "--pod-security", "restricted", "--run-as-user", "0"}, level: engine.PodSecurityRestricted, user: 1000},
		{name: "--run-as-user negative", args: []string{"--image", "img", "--pod-security", "restricted", "--run-as-user", "-5"},
			wantErr: `invalid runAsUser "-5"`, usage: true},
		{name: "existing restricted keeps level and user", cur: restricted, args: []string{"--size", "3"}, level: engine.PodSecurityRestricted, user: 4242},
		{name: "existing restricted to baseline drops the user", cur: restricted, args: []string{"--pod-security", "baseline"}, level: engine.PodSecurityBaseline},
		{name: "existing restricted made privileged", cur: restricted, args: []string{"--privileged"}, level: engine.PodSecurityPrivileged, privileged: true},
		{name: "existing privileged, --privileged=false", cur: privileged, args: []string{"--privileged=false"}, level: engine.PodSecurityBaseline},
		{name: "existing privileged to restricted", cur: privileged, args: []string{"--pod-security", "restricted"}, level: engine.PodSecurityRestricted, user: 1000},
		{name: "existing privileged keeps its level", cur: privileged, args: []string{"--size", "2"}, level: engine.PodSecurityPrivileged, privileged: true},
		{name: "existing baseline made privileged", cur: baseline, args: []string{"--privileged"}, level: engine.PodSecurityPrivileged, privileged: true},
		{name: "existing baseline, new user alone", cur: baseline, args: []string{"--run-as-user", "7"}, wantErr: "applies only to podSecurity restricted", usage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := applySpec(t, tt.cur, tt.args...)
			if tt.wantErr != "" {
				var ce *codeError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if tt.usage && (!errors.As(err, &ce) || ce.code != exitUsage) {
					t.Fatalf("error %v is not a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.PodSecurityLevel() != tt.level || s.Privileged != tt.privileged || s.RunAsUser != tt.user {
				t.Fatalf("podSecurity %q privileged %v runAsUser %d, want %q %v %d", s.PodSecurityLevel(), s.Privileged, s.RunAsUser, tt.level, tt.privileged, tt.user)
			}
		})
	}
}

func TestApplyFlagsImagePullSecrets(t *testing.T) {
	withTwo := storedSpec(engine.Spec{Image: "img", Size: 1, ImagePullSecrets: []string{"a", "b"}})
	tests := []struct {
		name    string
		cur     *engine.Spec
		args    []string
		want    []string
		wantErr string
	}{
		{name: "new pool: none", args: []string{"--image", "img"}},
		{name: "new pool: repeated", args: []string{"--image", "img", "--image-pull-secret", "regcred", "--image-pull-secret", "mirror"}, want: []string{"regcred", "mirror"}},
		{name: "existing kept when not given", cur: withTwo, args: []string{"--size", "3"}, want: []string{"a", "b"}},
		{name: "existing replaced", cur: withTwo, args: []string{"--image-pull-secret", "c"}, want: []string{"c"}},
		{name: "existing emptied", cur: withTwo, args: []string{"--image-pull-secret="}},
		{name: "a bad name", args: []string{"--image", "img", "--image-pull-secret", "Reg_Cred"}, wantErr: `invalid imagePullSecrets[0] "Reg_Cred": is not a Secret name`},
		{name: "twice", args: []string{"--image", "img", "--image-pull-secret", "a", "--image-pull-secret", "a"}, wantErr: "is named twice"},
		{name: "credentials in --image", args: []string{"--image", "bob:hunter2@registry.example/desk:1"}, wantErr: `invalid image "REDACTED@registry.example/desk:1": must not hold credentials`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := applySpec(t, tt.cur, tt.args...)
			if tt.wantErr != "" {
				var ce *codeError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ce) || ce.code != exitUsage || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error %v, want the usage error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.ImagePullSecrets, tt.want) {
				t.Fatalf("imagePullSecrets %q, want %q", s.ImagePullSecrets, tt.want)
			}
		})
	}
}

func TestApplyFlagsIsolate(t *testing.T) {
	broker := engine.NetworkPeer{PodSelector: map[string]string{"app": "broker"}}
	gateway := engine.NetworkPeer{NamespaceSelector: map[string]string{"kubernetes.io/metadata.name": "gw"}, Ports: []int32{5900}}
	registry := engine.NetworkPeer{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}
	isolated := storedSpec(engine.Spec{Image: "img", Size: 1, Isolate: true, Ingress: []engine.NetworkPeer{broker}, Egress: []engine.NetworkPeer{registry}})
	tests := []struct {
		name            string
		cur             *engine.Spec
		args            []string
		isolate         bool
		ingress, egress []engine.NetworkPeer
		wantErr         string
	}{
		{name: "new pool: not isolated", args: []string{"--image", "img"}},
		{name: "new pool: isolated, no peers", args: []string{"--image", "img", "--isolate"}, isolate: true},
		{name: "new pool: isolated with peers", args: []string{"--image", "img", "--isolate",
			"--ingress", `{"podSelector":{"app":"broker"}}`, "--ingress", `{"namespaceSelector":{"kubernetes.io/metadata.name":"gw"},"ports":[5900]}`,
			"--egress", `{"cidr":"10.0.0.0/8","except":["10.1.0.0/16"]}`},
			isolate: true, ingress: []engine.NetworkPeer{broker, gateway}, egress: []engine.NetworkPeer{registry}},
		{name: "existing keeps its peers", cur: isolated, args: []string{"--size", "2"}, isolate: true, ingress: []engine.NetworkPeer{broker}, egress: []engine.NetworkPeer{registry}},
		{name: "existing: --ingress replaces", cur: isolated, args: []string{"--ingress", `{"namespaceSelector":{"kubernetes.io/metadata.name":"gw"},"ports":[5900]}`},
			isolate: true, ingress: []engine.NetworkPeer{gateway}, egress: []engine.NetworkPeer{registry}},
		{name: "existing: --egress= opens egress", cur: isolated, args: []string{"--egress="}, isolate: true, ingress: []engine.NetworkPeer{broker}},
		{name: "existing: --isolate=false drops the peers", cur: isolated, args: []string{"--isolate=false"}},
		{name: "peers without isolate", args: []string{"--image", "img", "--ingress", `{"podSelector":{"app":"broker"}}`},
			wantErr: `invalid ingress: applies only to an isolated pool (isolate: true)`},
		{name: "--isolate=false with peers", cur: isolated, args: []string{"--isolate=false", "--egress", `{"cidr":"10.0.0.0/8"}`},
			wantErr: `invalid egress: applies only to an isolated pool`},
		{name: "a typo in a field", args: []string{"--image", "img", "--isolate", "--ingress", `{"podSelectr":{"app":"broker"}}`},
			wantErr: `--ingress "{\"podSelectr\":{\"app\":\"broker\"}}": not a peer: json: unknown field "podSelectr"`},
		{name: "not JSON", args: []string{"--image", "img", "--isolate", "--egress", "app=broker"}, wantErr: `--egress "app=broker": not a peer`},
		{name: "two objects in one flag", args: []string{"--image", "img", "--isolate", "--ingress", `{"cidr":"10.0.0.0/8"}{"cidr":"10.2.0.0/16"}`},
			wantErr: "more than one JSON object; repeat the flag"},
		{name: "a peer naming nothing", args: []string{"--image", "img", "--isolate", "--ingress", `{}`}, wantErr: "invalid ingress[0]: names no peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := applySpec(t, tt.cur, tt.args...)
			if tt.wantErr != "" {
				var ce *codeError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ce) || ce.code != exitUsage {
					t.Fatalf("error %v, want the usage error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Isolate != tt.isolate || !reflect.DeepEqual(s.Ingress, tt.ingress) || !reflect.DeepEqual(s.Egress, tt.egress) {
				t.Fatalf("isolate %v ingress %+v egress %+v, want %v %+v %+v", s.Isolate, s.Ingress, s.Egress, tt.isolate, tt.ingress, tt.egress)
			}
		})
	}
}

func TestApplyFlagsElastic(t *testing.T) {
	three := 3
	elastic := storedSpec(engine.Spec{Image: "img", Size: 4, MinSize: 2, MaxSize: 40, Spare: &three, Power: engine.PowerStopped})
	fixed := storedSpec(engine.Spec{Image: "img", Size: 5})
	tests := []struct {
		name                    string
		cur                     *engine.Spec
		args                    []string
		size, minSize, maxSize  int
		spare                   int
		power, settle, validErr string
	}{
		{name: "new fixed pool", args: []string{"--image", "img", "--size", "2"}, size: 2},
		{name: "new elastic pool starts from its spare", args: []string{"--image", "img", "--min-size", "2", "--max-size", "40", "--spare", "3"}, size: 3, minSize: 2, maxSize: 40, spare: 3},
		{name: "new elastic pool with a min above the spare starts from the min", args: []string{"--image", "img", "--min-size", "5", "--max-size", "40", "--spare", "3"}, size: 5, minSize: 5, maxSize: 40, spare: 3},
		{name: "new elastic pool with the default spare", args: []string{"--image", "img", "--max-size", "10"}, size: 1, maxSize: 10, spare: 1},
		{name: "new elastic pool with a size", args: []string{"--image", "img", "--max-size", "10", "--size", "6"}, size: 6, maxSize: 10, spare: 1},
		{name: "power and settle", args: []string{"--image", "img", "--max-size", "10", "--power", "stopped", "--settle", "90s"}, size: 1, maxSize: 10, spare: 1, power: engine.PowerStopped, settle: "90s"},
		{name: "a fixed pool made elastic keeps nothing of its size but the clamp", cur: fixed, args: []string{"--max-size", "20", "--spare", "2"}, size: 2, maxSize: 20, spare: 2},
		{name: "an elastic pool keeps its fields", cur: elastic, args: []string{"--spare", "5"}, size: 4, minSize: 2, maxSize: 40, spare: 5, power: engine.PowerStopped},
		{name: "--power running writes the default", cur: elastic, args: []string{"--power", "running"}, size: 4, minSize: 2, maxSize: 40, spare: 3},
		{name: "--max-size=0 makes it fixed", cur: elastic, args: []string{"--max-size=0"}, size: 4},
		{name: "min above max is refused by name", args: []string{"--image", "img", "--min-size", "9", "--max-size", "5"}, validErr: "invalid minSize"},
		{name: "spare above max is refused by name", args: []string{"--image", "img", "--max-size", "5", "--spare", "9", "--size", "2"}, validErr: "invalid spare"},
		{name: "size outside the bounds is refused by name", cur: elastic, args: []string{"--size", "41"}, validErr: "invalid size"},
		{name: "spare on a fixed pool is refused by name", cur: fixed, args: []string{"--spare", "2"}, validErr: "invalid spare"},
		{name: "an unknown power is refused by name", args: []string{"--image", "img", "--max-size", "5", "--power", "off"}, validErr: "invalid power"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, verr := applySpec(t, tt.cur, tt.args...)
			if verr == nil {
				s.Default()
				verr = s.Validate()
			}
			if tt.validErr != "" {
				if verr == nil || !strings.Contains(verr.Error(), tt.validErr) {
					t.Fatalf("Validate: %v, want %q", verr, tt.validErr)
				}
				return
			}
			if verr != nil {
				t.Fatalf("Validate: %v", verr)
			}
			if s.Size != tt.size || s.MinSize != tt.minSize || s.MaxSize != tt.maxSize || s.SpareTarget() != tt.spare || s.Power != tt.power || s.Settle != tt.settle {
				t.Fatalf("size %d min %d max %d spare %d power %q settle %q, want %d %d %d %d %q %q",
					s.Size, s.MinSize, s.MaxSize, s.SpareTarget(), s.Power, s.Settle, tt.size, tt.minSize, tt.maxSize, tt.spare, tt.power, tt.settle)
			}
		})
	}
}
