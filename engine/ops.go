package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// readPool reads a pool and parses its definition. A missing pool is
// ErrPoolNotFound; a persistent pool is ErrPersistentMode.
func (e *Engine) readPool(ctx context.Context, pool string) (Snapshot, Spec, error) {
	if err := ValidatePoolName(pool); err != nil {
		return Snapshot{}, Spec{}, err
	}
	snap, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return Snapshot{}, Spec{}, fmt.Errorf("read pool %s: %w", pool, err)
	}
	if snap.ConfigMap == nil {
		return snap, Spec{}, fmt.Errorf("%w: %s (no ConfigMap %s in namespace %s)", ErrPoolNotFound, pool, ConfigMapName(pool), e.Namespace)
	}
	spec, err := ParseSpec(snap.ConfigMap.Data[KeySpec])
	if err != nil {
		return snap, Spec{}, fmt.Errorf("pool %s: %w", pool, err)
	}
	return snap, spec, nil
}

// ApplyResult reports an apply.
type ApplyResult struct {
	Created  bool
	Changed  bool
	Warnings []string
	// Reconciled: the reconcile after the write ran (Reconcile is its
	// result); false when apply stopped before it.
	Reconciled bool
	Reconcile  ReconcileResult
	// PolicyRemoved: the pool was isolated and no longer is, and apply
	// deleted its NetworkPolicy.
	PolicyRemoved bool
	// Spec is the definition apply wrote (or found already written).
	Spec Spec
}

// Apply writes spec as the whole pool definition (creating the pool when
// needed), then reconciles once. The status already recorded is kept. For an
// edit of the stored definition use ApplyEdit.
func (e *Engine) Apply(ctx context.Context, pool string, spec Spec) (ApplyResult, error) {
	return e.ApplyEdit(ctx, pool, func(*Spec) (Spec, error) { return spec, nil }, true)
}

// SpecEdit turns the stored definition (nil for a new pool, or when the
// definition is replaced) into the one to write.
type SpecEdit func(stored *Spec) (Spec, error)

// ApplyEdit creates or changes the pool definition with edit, then
// reconciles once. The definition is written with a compare-and-swap on the
// resourceVersion it was read at, so a concurrent change is never lost. A
// stored definition that does not parse, or says mode: persistent, is an
// error and nothing is written, unless replace is set: then edit gets nil and
// its result replaces the definition whole. Errors of edit are returned as
// they are.
func (e *Engine) ApplyEdit(ctx context.Context, pool string, edit SpecEdit, replace bool) (res ApplyResult, err error) {
	return e.ApplyWith(ctx, pool, edit, ApplyOptions{Replace: replace})
}

// ApplyOptions are how an apply reads what it is given.
type ApplyOptions struct {
	// Replace: a stored definition that does not parse is replaced whole
	// (edit gets nil).
	Replace bool
	// SizeGiven: the caller named the size (apply --size). The size is an
	// instruction about the pool's effective size: on an elastic pool it
	// takes effect whether or not the stored field changes (the elastic
	// record is set to it with the definition), and a pool made fixed
	// without it stays at its effective size.
	SizeGiven bool
}

// ApplyWith is ApplyEdit with options.
func (e *Engine) ApplyWith(ctx context.Context, pool string, edit SpecEdit, opts ApplyOptions) (res ApplyResult, err error) {
	replace := opts.Replace
	var spec Spec
	defer func() {
		detail := ""
		if spec.Image != "" {
			detail = fmt.Sprintf("image %s size %d", RedactImage(spec.Image), spec.Size)
		}
		e.audit(ctx, AuditEntry{Pool: pool, Action: ActionApply, Detail: detail, Err: err})
	}()
	if err := ValidatePoolName(pool); err != nil {
		return res, err
	}
	snap, err := e.Cluster.Snapshot(ctx, pool)
	if err != nil {
		return res, fmt.Errorf("read pool %s: %w", pool, err)
	}
	var stored *Spec
	wasIsolated := false
	if snap.ConfigMap != nil {
		prev, perr := ParseSpec(snap.ConfigMap.Data[KeySpec])
		wasIsolated = perr == nil && prev.Isolate
	}
	if snap.ConfigMap != nil && !replace {
		data := snap.ConfigMap.Data[KeySpec]
		cur, perr := ParseSpec(data)
		switch {
		case errors.Is(perr, ErrPersistentMode):
			return res, fmt.Errorf("pool %s is stored with mode: persistent: %w; nothing was written", pool, perr)
		case perr != nil:
			return res, fmt.Errorf("the stored definition of pool %s (ConfigMap %s) does not parse: %s; nothing was written (fix it with kubectl edit, or give apply --replace to write the whole definition from the flags and the defaults)",
				pool, snap.ConfigMap.Name, LocateSpecError(data, perr))
		}
		stored = &cur
	}
	if spec, err = edit(stored); err != nil {
		return res, err
	}
	var view PoolView
	if snap.ConfigMap != nil {
		view = Observe(snap, e.Now())
		if stored != nil && stored.Elastic() && !spec.Elastic() && !opts.SizeGiven {
			// Elasticity turned off: the pool stays at the size it has
			// (never below a claimed member), not at the size the
			// definition started from.
			spec.Size = max(view.Size, claimedTop(&view, MaxPoolSize))
		}
	}
	spec.Default()
	if err := spec.Validate(); err != nil {
		return res, err
	}
	res.Warnings, res.Spec = spec.Warnings(), spec
	w, err := e.checkPodSecurity(ctx, pool, spec)
	if err != nil {
		return res, err
	}
	res.Warnings = append(res.Warnings, w...)
	if w, err = e.checkPullSecrets(ctx, pool, spec); err != nil {
		return res, err
	}
	res.Warnings = append(res.Warnings, w...)
	if snap.ConfigMap == nil {
		if _, err := e.Cluster.CreateConfigMap(ctx, BuildConfigMap(e.Namespace, pool, spec)); err != nil {
			if errors.Is(err, ErrAlreadyExists) {
				return res, fmt.Errorf("create pool %s: created by someone else meanwhile; run apply again: %w", pool, err)
			}
			return res, fmt.Errorf("create pool %s: %w", pool, err)
		}
		res.Created, res.Changed = true, true
	} else {
		var status *string
		if opts.SizeGiven {
			status = sizeInstruction(view.Recorded.Elastic, snap.ConfigMap.Data[KeyStatus], spec, e.Now(), "apply --size", false)
		}
		if snap.ConfigMap.Data[KeySpec] != spec.Encode() || snap.ConfigMap.Labels[LabelPool] != pool || status != nil {
			if err := e.writeDefinition(ctx, snap, spec, status); err != nil {
				return res, fmt.Errorf("update pool %s: %w", pool, err)
			}
			res.Changed = true
		}
	}
	if wasIsolated && !spec.Isolate {
		removed, err := e.removeIsolation(ctx, pool)
		if err != nil {
			return res, fmt.Errorf("pool %s is written without isolate, but its NetworkPolicy %s stays (its members stay isolated): %w; run apply again, or delete the policy by hand", pool, NetworkPolicyName(pool), err)
		}
		res.PolicyRemoved = removed
	}
	rr, err := e.Reconcile(ctx, pool)
	res.Reconcile, res.Reconciled = rr, true
	if p := rr.Protection; p != nil && !p.Protected() {
		res.Warnings = append(res.Warnings, p.Text())
	}
	return res, err
}

// Resize sets the pool size (compare-and-swap on the ConfigMap's
// resourceVersion, so of two concurrent resizes one fails clearly) and
// reconciles once.
func (e *Engine) Resize(ctx context.Context, pool string, size int) (res ReconcileResult, err error) {
	defer func() {
		e.audit(ctx, AuditEntry{Pool: pool, Action: ActionResize, Detail: fmt.Sprintf("size %d", size), Err: err})
	}()
	snap, spec, err := e.readPool(ctx, pool)
	if err != nil {
		return res, err
	}
	spec.Size = size
	if err := spec.Validate(); err != nil {
		return res, err
	}
	status := snap.ConfigMap.Data[KeyStatus]
	// A resize writes its instruction even when the record already names
	// the size: a reconcile that read the pool before it and decided
	// another size then finds the record changed under it (its decision
	// is compared with the record it read: writeElasticStatus) and gives
	// way, instead of undoing the resize a moment after it.
	if err := e.writeDefinition(ctx, snap, spec, sizeInstruction(RecordedElastic(status), status, spec, e.Now(), "a resize", true)); err != nil {
		return res, fmt.Errorf("resize %s: %w", pool, err)
	}
	return e.Reconcile(ctx, pool)
}

// sizeInstruction is the status to write with an elastic pool's definition
// when its size was given (a resize, apply --size): the recorded elastic
// record set to that size, decided from that definition, so that reconcile
// starts from it even when the stored size field does not change (an
// elastic pool's recorded size moves away from its definition's). nil for
// a fixed pool, and (unless always) when the record already says so.
func sizeInstruction(rec *ElasticStatus, status string, spec Spec, now time.Time, by string, always bool) *string {
	if !spec.Elastic() {
		return nil
	}
	if !always && rec != nil && rec.Size == spec.Size && rec.From == spec.Size {
		return nil
	}
	el := ElasticStatus{Size: spec.Size, From: spec.Size, Reason: fmt.Sprintf("set to %d by %s", spec.Size, by), ChangedAt: &now}
	if rec != nil {
		el.AtCeiling = rec.AtCeiling
	}
	st := withElasticLine(status, el)
	return &st
}

// writeSpec writes spec into the pool's ConfigMap with a compare-and-swap on
// the resourceVersion of snap (a merge patch carrying it), and labels the
// ConfigMap with its pool. Nothing is written when the definition is already
// spec.
func (e *Engine) writeSpec(ctx context.Context, snap Snapshot, spec Spec) error {
	return e.writeDefinition(ctx, snap, spec, nil)
}

// writeDefinition is writeSpec that also writes status (when not nil) in the
// same compare-and-swap.
func (e *Engine) writeDefinition(ctx context.Context, snap Snapshot, spec Spec, status *string) error {
	cm := snap.ConfigMap
	enc := spec.Encode()
	if cm.Data[KeySpec] == enc && cm.Labels[LabelPool] == snap.Pool && status == nil {
		return nil
	}
	data := map[string]string{KeySpec: enc}
	if status != nil {
		data[KeyStatus] = *status
	}
	for try := 1; ; try++ {
		err := e.Cluster.PatchConfigMap(ctx, cm.Name, cm.ResourceVersion, map[string]string{LabelPool: snap.Pool}, data)
		if !errors.Is(err, ErrConflict) {
			return err
		}
		// Lost to a write that left the definition as it was read (a
		// reconciler's status write, which a busy pool makes every few
		// seconds): the change holds as well on the newer version. A status
		// written with the definition was computed from the status read, so
		// it is not written over a newer one.
		if try < definitionWriteTries && status == nil {
			if cur, gerr := e.Cluster.GetConfigMap(ctx, cm.Name); gerr == nil && cur.Data[KeySpec] == cm.Data[KeySpec] {
				cm = cur
				continue
			}
		}
		return fmt.Errorf("the pool definition was changed by someone else meanwhile; look again and retry: %w", err)
	}
}

// definitionWriteTries bounds the writes of a definition that lose only to
// writes of the status.
const definitionWriteTries = 3
