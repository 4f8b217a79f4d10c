package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels, annotations and identities of the pool contract.
const (
	LabelPool = "corral.dev/vdi-ct-pool"
	// LabelHolder on a Lease the engine writes is HolderLabel of its holder,
	// so that a claim finds its identity's Leases by a label selector.
	LabelHolder = "ctpool.dev/holder"
	LabelMember = "corral.dev/vdi-ct-member"
	LabelSource = "corral.dev/vdi-ct-source"

	// AnnotationAssignedTo mirrors the claim holder on the member PVC (display only).
	AnnotationAssignedTo = "corral.dev/vdi-assigned-to"
	// AnnotationReleased marks the data PVC of a member whose release has
	// begun: such a member counts as drifted, so it is rebuilt, never reused.
	AnnotationReleased = "ctpool.dev/released"
	// AnnotationReleasing is set on the Lease a release takes, in the same
	// compare-and-swap, to the holder whose claim it ends: should the release
	// stop before it marks the data (a lost answer, a crash), the member
	// still counts as released, so a reconcile rebuilds it once the Lease is
	// stale and never hands the data to someone else.
	AnnotationReleasing = "ctpool.dev/releasing"

	// ReconcilerIdentity is the Lease holder while the reconciler (or a release)
	// works on a member. Claims with this identity are refused.
	ReconcilerIdentity = "corral-vdi/reconciler"

	// ConfigMap keys.
	KeySpec   = "spec"
	KeyStatus = "status"

	// ContainerName is the name of the member's desktop container.
	ContainerName = "desktop"
	// DataVolume is the name of the member's data volume.
	DataVolume = "data"
)

// Durations of the Lease contract.
const (
	ClaimDuration       = time.Hour
	ReconcilerLeaseTTL  = 10 * time.Minute
	DeleteWaitTimeout   = 2 * time.Minute
	ExpiringSoon        = 10 * time.Minute
	MaxIdentityLength   = 253
	MaxPoolNameLength   = 40
	MaxPoolSize         = 99999
	configMapNamePrefix = "corral-vdi-ctpool-"
	leaseNamePrefix     = "corral-vdi-ct-"
)

// ConfigMapName is the name of the ConfigMap that holds a pool's spec and status.
func ConfigMapName(pool string) string { return configMapNamePrefix + pool }

// PoolFromConfigMapName returns the pool name of a pool ConfigMap name.
func PoolFromConfigMapName(name string) (string, bool) {
	if !strings.HasPrefix(name, configMapNamePrefix) {
		return "", false
	}
	return strings.TrimPrefix(name, configMapNamePrefix), true
}

// HolderLabel is LabelHolder's value for a Lease holder: 32 hex digits of
// the SHA-256 of the identity (an identity is no valid label value).
func HolderLabel(holder string) string {
	sum := sha256.Sum256([]byte(holder))
	return hex.EncodeToString(sum[:16])
}

// DefinedPool reports the pool a ConfigMap of this name and labels defines:
// one named ConfigMapName(pool) of a valid pool name, labelled with that
// pool. It is the one rule by which every reader (the caches, the
// dashboard's changes, the commands, completion, the demo) knows a pool
// definition; a ConfigMap labelled for a pool but named otherwise is none.
func DefinedPool(name string, labels map[string]string) (string, bool) {
	pool, ok := PoolFromConfigMapName(name)
	if !ok || labels[LabelPool] != pool || ValidatePoolName(pool) != nil {
		return "", false
	}
	return pool, true
}

// MemberName is the name of member n of a pool: <pool>-<n>.
func MemberName(pool string, n int) string { return pool + "-" + strconv.Itoa(n) }

// PVCName is the name of a member's data PVC.
func PVCName(member string) string { return member + "-data" }

// ConsoleServiceName is the name of a member's console Service.
func ConsoleServiceName(member string) string { return member + "-console" }

// LeaseName is the name of a member's claim Lease.
func LeaseName(member string) string { return leaseNamePrefix + member }

// MemberIndex parses the index n of a member name <pool>-<n>. It returns false
// when the name does not belong to the pool or n is not a positive integer.
func MemberIndex(pool, member string) (int, bool) {
	// No pool+"-" is built: this runs for every object of every rebuild.
	if len(member) <= len(pool) || member[len(pool)] != '-' || member[:len(pool)] != pool {
		return 0, false
	}
	rest := member[len(pool)+1:]
	if rest == "" || rest[0] < '1' || rest[0] > '9' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// MemberFromPVCName returns the member name of a data PVC name.
func MemberFromPVCName(name string) (string, bool) { return strings.CutSuffix(name, "-data") }

// MemberFromLeaseName returns the member name of a claim Lease name.
func MemberFromLeaseName(name string) (string, bool) { return strings.CutPrefix(name, leaseNamePrefix) }

// ValidatePoolName checks that a pool name is a DNS-1123 label that starts with
// a letter and is short enough for every derived name (members, PVCs, console
// Services, Leases, label values) to stay valid.
func ValidatePoolName(pool string) error {
	if pool == "" {
		return &InvalidError{Field: "pool", Reason: "must not be empty"}
	}
	if len(pool) > MaxPoolNameLength {
		return &InvalidError{Field: "pool", Value: pool, Reason: fmt.Sprintf("must be at most %d characters", MaxPoolNameLength)}
	}
	if errs := validation.IsDNS1035Label(pool); len(errs) > 0 {
		return &InvalidError{Field: "pool", Value: pool, Reason: "must consist of lower case letters, digits and '-', start with a letter and end with a letter or digit"}
	}
	return nil
}

// ValidateIdentity checks a claim identity: non-empty, at most 253 characters,
// valid UTF-8 without control characters, and not the reserved reconciler identity.
func ValidateIdentity(identity string) error {
	switch {
	case identity == "":
		return &InvalidError{Field: "identity", Reason: "must not be empty"}
	case utf8.RuneCountInString(identity) > MaxIdentityLength:
		return &InvalidError{Field: "identity", Reason: fmt.Sprintf("must be at most %d characters (got %d)", MaxIdentityLength, utf8.RuneCountInString(identity))}
	case !utf8.ValidString(identity):
		return &InvalidError{Field: "identity", Reason: "must be valid UTF-8"}
	case identity == ReconcilerIdentity:
		return fmt.Errorf("%w: %q is reserved for the reconciler", ErrReservedIdentity, identity)
	}
	for _, r := range identity {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return &InvalidError{Field: "identity", Reason: fmt.Sprintf("must not contain control or format characters (found %U)", r)}
		}
	}
	if strings.TrimSpace(identity) != identity {
		return &InvalidError{Field: "identity", Reason: "must not start or end with white space"}
	}
	return nil
}

func dns1123Subdomain(v string) string {
	if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
		return strings.Join(errs, "; ")
	}
	return ""
}

func labelValue(v string) string {
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return strings.Join(errs, "; ")
	}
	return ""
}
