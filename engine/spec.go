package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Modes of a pool. Only ModeEphemeral is supported.
const (
	ModeEphemeral  = "ephemeral"
	ModePersistent = "persistent"
)

// Spec defaults.
const (
	DefaultCPU    = "1"
	DefaultMemory = "2Gi"
	DefaultDisk   = "5Gi"
)

// Pod Security levels of a pool (Spec.PodSecurity), the levels of the
// Kubernetes Pod Security Standards its member Pods satisfy.
const (
	PodSecurityPrivileged = "privileged"
	PodSecurityBaseline   = "baseline"
	PodSecurityRestricted = "restricted"
)

// PodSecurityLevels are the levels from the loosest to the strictest.
var PodSecurityLevels = []string{PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted}

// DefaultRunAsUser is the user (and group, and fsGroup) a restricted
// member runs as when runAsUser is not given.
const DefaultRunAsUser int64 = 1000

// MaxImagePullSecrets bounds Spec.ImagePullSecrets.
const MaxImagePullSecrets = 16

// maxRunAsUser is the largest user id the API server takes.
const maxRunAsUser = 2147483647

// Spec is a pool definition, stored as YAML under the key "spec" of the pool ConfigMap.
type Spec struct {
	Image        string `json:"image"`
	CPU          string `json:"cpu,omitempty"`
	Memory       string `json:"memory,omitempty"`
	Disk         string `json:"disk,omitempty"`
	StorageClass string `json:"storageClass,omitempty"`
	Privileged   bool   `json:"privileged,omitempty"`
	// PodSecurity is the level of the Pod Security Standards the member
	// Pods satisfy: baseline (the default of an unprivileged pool),
	// restricted, or privileged (implied by, and implying, privileged: true).
	PodSecurity string `json:"podSecurity,omitempty"`
	// RunAsUser is the user, group and fsGroup of a restricted member
	// (default DefaultRunAsUser); it is refused on another level.
	RunAsUser int64 `json:"runAsUser,omitempty"`
	// ImagePullSecrets names Secrets (kubernetes.io/dockerconfigjson or
	// kubernetes.io/dockercfg) in the namespace that every member Pod pulls
	// its images with. Not a source field: a change takes effect on each
	// member as it is next created, and drifts none.
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// Isolate makes the engine own the pool's NetworkPolicy
	// (NetworkPolicyName): members accept traffic only from the Ingress
	// peers (none by default) and never from a pool member, and, when Egress
	// names peers, reach only DNS and those. Not a source field: apply and
	// reconcile change the policy, no member drifts.
	Isolate bool          `json:"isolate,omitempty"`
	Ingress []NetworkPeer `json:"ingress,omitempty"`
	Egress  []NetworkPeer `json:"egress,omitempty"`
	Init    bool          `json:"init,omitempty"`
	Mode    string        `json:"mode,omitempty"`
	Size    int           `json:"size"`
	// MaxSize makes the pool elastic (elastic.go): the reconciler keeps
	// Spare free members ready (default DefaultSpare) by moving its
	// effective size within [MinSize, MaxSize], starting from Size;
	// Power says whether free members beyond the spare run (running, the
	// default) or are stopped (Pod deleted, PVC kept); Settle is how long
	// the pool stays above its spare before it shrinks (default
	// DefaultSettle). None is a source field.
	MinSize int    `json:"minSize,omitempty"`
	MaxSize int    `json:"maxSize,omitempty"`
	Spare   *int   `json:"spare,omitempty"`
	Power   string `json:"power,omitempty"`
	Settle  string `json:"settle,omitempty"`
	// MaxUnavailable bounds a rollout (rollout.go): at most this many of
	// the pool's members out of service at once while drifted members are
	// replaced, a count ("3") or a percentage of the size ("25%", the
	// default DefaultMaxUnavailable, at least 1). RolloutDeadline is how
	// long a new member may take to become Ready before it counts as a
	// failure of the rollout (default DefaultRolloutDeadline). Neither is
	// a source field; both are written only when given, so that a pool
	// that leaves them out stays readable by a release that knows neither.
	MaxUnavailable  string   `json:"maxUnavailable,omitempty"`
	RolloutDeadline string   `json:"rolloutDeadline,omitempty"`
	Runtime         *Runtime `json:"runtime,omitempty"`
}

// ParseSpec decodes a spec from YAML (or JSON). Unknown fields and malformed
// YAML are errors that name the field. Defaults are filled in and the result
// is validated.
func ParseSpec(data string) (Spec, error) {
	var s Spec
	if strings.TrimSpace(data) == "" {
		return s, &InvalidError{Field: "spec", Reason: "is empty"}
	}
	if err := yaml.UnmarshalStrict([]byte(data), &s); err != nil {
		return Spec{}, &InvalidError{Field: "spec", Reason: cleanYAMLError(err)}
	}
	s.Default()
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// cleanYAMLError turns the decoder's error into a short sentence that names the field.
func cleanYAMLError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
	msg = strings.ReplaceAll(msg, "json: ", "")
	msg = strings.ReplaceAll(msg, "Go struct field ", "field ")
	msg = strings.ReplaceAll(msg, "Spec.", "")
	return msg
}

// Default fills in the documented defaults.
func (s *Spec) Default() {
	if s.CPU == "" {
		s.CPU = DefaultCPU
	}
	if s.Memory == "" {
		s.Memory = DefaultMemory
	}
	if s.Disk == "" {
		s.Disk = DefaultDisk
	}
	if s.Mode == "" {
		s.Mode = ModeEphemeral
	}
	if s.Runtime == nil {
		s.Runtime = &Runtime{Backend: BackendStandard}
	}
	s.Runtime.Default()
	if len(s.ImagePullSecrets) == 0 {
		s.ImagePullSecrets = nil // "imagePullSecrets: []" reads as none
	}
	if len(s.Ingress) == 0 {
		s.Ingress = nil
	}
	if len(s.Egress) == 0 {
		s.Egress = nil // open, as with no egress field
	}
	// The level is written down only when it is not the pool's default
	// one, so that the privileged flag alone keeps deciding between the two
	// defaults: a stored pool edited to privileged: true, or a caller that
	// sets Privileged on a defaulted spec, is privileged, not in conflict
	// with a baseline nobody chose. PodSecurityLevel reads the level.
	level := s.podSecurityLevel()
	if level == PodSecurityPrivileged {
		s.Privileged = true
	}
	if level == s.defaultPodSecurity() {
		s.PodSecurity = ""
	}
	if level == PodSecurityRestricted && s.RunAsUser == 0 {
		s.RunAsUser = DefaultRunAsUser
	}
}

// PodSecurityLevel is the pool's Pod Security level: PodSecurity, or the
// default level (privileged for a privileged pool, else baseline) when it
// names none.
func (s Spec) PodSecurityLevel() string { return s.podSecurityLevel() }

// defaultPodSecurity is the level of a pool that names none: privileged for
// a privileged pool, baseline for another.
func (s Spec) defaultPodSecurity() string {
	if s.Privileged {
		return PodSecurityPrivileged
	}
	return PodSecurityBaseline
}

// podSecurityLevel is the pool's level: PodSecurity, or the default level
// when it names none.
func (s Spec) podSecurityLevel() string {
	if s.PodSecurity == "" {
		return s.defaultPodSecurity()
	}
	return s.PodSecurity
}

// runAsUser is the user of a restricted member (0 on another level).
func (s Spec) runAsUser() int64 {
	if s.podSecurityLevel() != PodSecurityRestricted {
		return 0
	}
	if s.RunAsUser == 0 {
		return DefaultRunAsUser
	}
	return s.RunAsUser
}

// validatePullSecrets checks the names of imagePullSecrets: Secret names
// (DNS-1123 subdomains), at most MaxImagePullSecrets, each once.
func validatePullSecrets(names []string) error {
	if len(names) > MaxImagePullSecrets {
		return &InvalidError{Field: "imagePullSecrets", Reason: fmt.Sprintf("names %d Secrets, more than %d", len(names), MaxImagePullSecrets)}
	}
	seen := map[string]bool{}
	for i, n := range names {
		field := fmt.Sprintf("imagePullSecrets[%d]", i)
		if msg := dns1123Subdomain(n); msg != "" {
			return &InvalidError{Field: field, Value: n, Reason: "is not a Secret name: " + msg}
		}
		if seen[n] {
			return &InvalidError{Field: field, Value: n, Reason: "is named twice"}
		}
		seen[n] = true
	}
	return nil
}

// validatePodSecurity checks podSecurity, privileged and runAsUser together.
func (s *Spec) validatePodSecurity() error {
	level := s.podSecurityLevel()
	if !oneOf(level, PodSecurityLevels) {
		return &InvalidError{Field: "podSecurity", Value: level, Reason: "must be one of " + strings.Join(PodSecurityLevels, ", ")}
	}
	if s.Privileged && level != PodSecurityPrivileged {
		return &InvalidError{Field: "podSecurity", Value: level,
			Reason: "conflicts with privileged: true: the " + level + " level refuses a privileged container (give podSecurity privileged, or drop privileged)"}
	}
	if level == PodSecurityRestricted {
		if s.RunAsUser < 0 || s.RunAsUser > maxRunAsUser {
			return &InvalidError{Field: "runAsUser", Value: fmt.Sprint(s.RunAsUser), Reason: fmt.Sprintf("must be a user id from 1 to %d (the restricted level refuses root)", maxRunAsUser)}
		}
	} else if s.RunAsUser != 0 {
		return &InvalidError{Field: "runAsUser", Value: fmt.Sprint(s.RunAsUser), Reason: "applies only to podSecurity restricted (this pool is " + level + ")"}
	}
	return nil
}

// Validate checks every field. Persistent mode is refused with ErrPersistentMode.
func (s *Spec) Validate() error {
	if strings.TrimSpace(s.Image) == "" {
		return &InvalidError{Field: "image", Reason: "is required"}
	}
	if err := s.validateNoCredentials(); err != nil {
		return err
	}
	if strings.ContainsAny(s.Image, " \t\r\n") || hasControl(s.Image) {
		return &InvalidError{Field: "image", Value: s.Image, Reason: "must not contain white space or control characters"}
	}
	for _, q := range []struct{ field, value string }{{"cpu", s.CPU}, {"memory", s.Memory}, {"disk", s.Disk}} {
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return &InvalidError{Field: q.field, Value: q.value, Reason: "is not a quantity (examples: 500m, 2, 2Gi)"}
		}
		if v.Sign() <= 0 {
			return &InvalidError{Field: q.field, Value: q.value, Reason: "must be greater than zero"}
		}
	}
	if s.StorageClass != "" {
		if msgs := dns1123Subdomain(s.StorageClass); msgs != "" {
			return &InvalidError{Field: "storageClass", Value: s.StorageClass, Reason: msgs}
		}
	}
	switch s.Mode {
	case ModeEphemeral:
	case ModePersistent:
		return ErrPersistentMode
	default:
		return &InvalidError{Field: "mode", Value: s.Mode, Reason: "must be ephemeral"}
	}
	if s.Size < 0 {
		return &InvalidError{Field: "size", Value: fmt.Sprint(s.Size), Reason: "must not be negative"}
	}
	if s.Size > MaxPoolSize {
		return &InvalidError{Field: "size", Value: fmt.Sprint(s.Size), Reason: fmt.Sprintf("must be at most %d", MaxPoolSize)}
	}
	if err := s.validateElastic(); err != nil {
		return err
	}
	if err := s.validateRollout(); err != nil {
		return err
	}
	if s.Runtime != nil {
		if err := s.Runtime.Validate(); err != nil {
			return err
		}
	}
	if err := s.validatePodSecurity(); err != nil {
		return err
	}
	if err := validatePullSecrets(s.ImagePullSecrets); err != nil {
		return err
	}
	if err := s.validateIsolation(); err != nil {
		return err
	}
	if n := len(s.sourceEncoding()); n > MaxSourceRecordBytes {
		return &InvalidError{Field: "spec", Reason: fmt.Sprintf("the source fields (image, runtime, ...) take %d bytes, more than %d (each member records its source on its PVC)", n, MaxSourceRecordBytes)}
	}
	return nil
}

// Encode returns the spec as YAML, the form stored in the ConfigMap.
func (s Spec) Encode() string {
	out, err := yaml.Marshal(s)
	if err != nil { // a Spec always marshals; keep the error visible if it ever does not
		return fmt.Sprintf("# encode error: %v\n", err)
	}
	return string(out)
}

// sourceFields is the canonical encoding of what makes a member's source.
type sourceFields struct {
	Image        string   `json:"image"`
	CPU          string   `json:"cpu"`
	Memory       string   `json:"memory"`
	Disk         string   `json:"disk"`
	StorageClass string   `json:"storageClass"`
	Privileged   bool     `json:"privileged"`
	Init         bool     `json:"init"`
	Runtime      *Runtime `json:"runtime"`
	// PodSecurity and RunAsUser are encoded only when the level is not the
	// pool's default one (baseline unprivileged, privileged privileged), so
	// that a pool of its default level hashes as it did before the field
	// existed: so far, a restricted pool.
	PodSecurity string `json:"podSecurity,omitempty"`
	RunAsUser   int64  `json:"runAsUser,omitempty"`
}

// SourceHash is the hex SHA-256, cut to 16 characters, of the canonical
// encoding of the source fields (image, cpu, memory, disk, storageClass,
// privileged, init and runtime, and podSecurity with runAsUser when the
// level is not the pool's default one). Quantities are canonicalised, so "2048Mi" and
// "2Gi" hash alike. Size and mode are not source fields.
func (s Spec) SourceHash() string { return hashSource(s.sourceEncoding()) }

func hashSource(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// sourceEncoding is the canonical encoding of the source fields, the bytes
// SourceHash hashes and SourceRecord returns.
func (s Spec) sourceEncoding() []byte {
	rt := s.Runtime
	if rt == nil {
		rt = &Runtime{}
	}
	c := *rt
	c.Default()
	f := sourceFields{
		Image:        s.Image,
		CPU:          canonicalQuantity(s.CPU, DefaultCPU),
		Memory:       canonicalQuantity(s.Memory, DefaultMemory),
		Disk:         canonicalQuantity(s.Disk, DefaultDisk),
		StorageClass: s.StorageClass,
		Privileged:   s.Privileged,
		Init:         s.Init,
		Runtime:      &c,
	}
	if level := s.podSecurityLevel(); level != s.defaultPodSecurity() {
		f.PodSecurity, f.RunAsUser = level, s.runAsUser()
	}
	b, _ := json.Marshal(f) // plain struct of strings, bools and ints: cannot fail
	return b
}

// AnnotationSource, on a member's data PVC, records the source the member was
// built from: SourceRecord of the spec it was built with. A claimed member
// that lost its Pod is started again from it (SpecFromSourceRecord), never
// from a changed pool definition.
const AnnotationSource = "ctpool.dev/source"

// MaxSourceRecordBytes bounds SourceRecord (Validate refuses a spec whose
// source fields encode longer), so that the record stays far below the
// API server's 256 KiB limit on an object's annotations.
const MaxSourceRecordBytes = 16 << 10

// SourceRecord is the canonical encoding of the source fields (JSON, the
// bytes SourceHash hashes), the value of AnnotationSource.
func (s Spec) SourceRecord() string { return string(s.sourceEncoding()) }

// SpecFromSourceRecord decodes a SourceRecord into the spec a member was built
// from: the record's source fields with pool's size, mode and
// imagePullSecrets. It fails, never
// panics, on a record that does not decode, is not a valid source, or whose
// hash is not wantHash (the source label of the object it was read from; ""
// skips that check): a hand-edited record is not trusted.
func SpecFromSourceRecord(rec string, pool Spec, wantHash string) (Spec, error) {
	if len(rec) > MaxSourceRecordBytes {
		return Spec{}, fmt.Errorf("recorded source is %d bytes, more than %d", len(rec), MaxSourceRecordBytes)
	}
	var f sourceFields
	dec := json.NewDecoder(strings.NewReader(rec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Spec{}, fmt.Errorf("recorded source does not parse: %s", cleanYAMLError(err))
	}
	if dec.More() {
		return Spec{}, errors.New("recorded source does not parse: data after the record")
	}
	s := Spec{
		Image: f.Image, CPU: f.CPU, Memory: f.Memory, Disk: f.Disk, StorageClass: f.StorageClass,
		Privileged: f.Privileged, Init: f.Init, Runtime: f.Runtime, Size: pool.Size, Mode: pool.Mode,
		PodSecurity: f.PodSecurity, RunAsUser: f.RunAsUser,
		ImagePullSecrets: pool.ImagePullSecrets,
	}
	s.Default()
	if err := s.Validate(); err != nil {
		return Spec{}, fmt.Errorf("recorded source is not valid: %w", err)
	}
	if h := s.SourceHash(); wantHash != "" && h != wantHash {
		return Spec{}, fmt.Errorf("recorded source hashes to %s, not to the source label %s", h, wantHash)
	}
	return s, nil
}

func canonicalQuantity(v, def string) string {
	if v == "" {
		v = def
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return v
	}
	return q.String()
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

// LocateSpecError returns err's text with the line of data it is about: the
// decoder names the line itself; for a field error (unknown or invalid
// field) the line where the field's key stands is added, with its value only
// when the error already quotes it (never an unknown field's value, which
// may be a password, nor a redacted one).
func LocateSpecError(data string, err error) string {
	msg := err.Error()
	if strings.Contains(msg, "line ") {
		return msg
	}
	field, value := "", ""
	var inv *InvalidError
	if errors.As(err, &inv) {
		field = inv.Field
		if !inv.Secret {
			value = inv.Value
		}
	}
	if i := strings.Index(msg, `unknown field "`); i >= 0 {
		rest := msg[i+len(`unknown field "`):]
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			field = rest[:j]
		}
	}
	if k := strings.LastIndexByte(field, '.'); k >= 0 {
		field = field[k+1:]
	}
	if field == "" || field == "spec" {
		return msg
	}
	for n, line := range strings.Split(data, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && strings.Trim(key, `"'`) == field {
			// The line's value is quoted only when the error already
			// shows it: an unknown field's value, or a secret, never.
			if v := strings.Trim(strings.TrimSpace(val), `"'`); value != "" && v == value {
				return fmt.Sprintf("%s (line %d: %s)", msg, n+1, strings.TrimSpace(line))
			}
			return fmt.Sprintf("%s (line %d: %s)", msg, n+1, key)
		}
	}
	return msg
}
