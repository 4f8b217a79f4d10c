package engine

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// definitionCache remembers what a pool ConfigMap's spec and status texts
// parse to, so that observing a fleet again does not decode thousands of
// unchanged YAML documents: decoding was most of a whole rebuild's cost at
// 3,000 pools. It is keyed by the texts themselves, not by the object's
// resourceVersion (fake clients keep that unchanged across writes), so an
// answer is always the parse of exactly those texts. It is bounded (emptied
// when full) and safe for concurrent use.
type definitionCache struct {
	mu      sync.Mutex
	entries map[definitionText]parsedDefinition
}

type definitionText struct{ spec, status string }

// definitionCacheSize bounds the cache: more pool definitions than any one
// dashboard shows (60,000 members in pools of 20 are 3,000).
const definitionCacheSize = 8192

type parsedDefinition struct {
	spec      Spec
	specErr   error
	source    string
	rec       Status
	recordErr error
}

var definitions = &definitionCache{}

func (c *definitionCache) parse(cm *corev1.ConfigMap) parsedDefinition {
	key := definitionText{cm.Data[KeySpec], cm.Data[KeyStatus]}
	c.mu.Lock()
	d, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return d.clone()
	}
	spec, err := ParseSpec(key.spec)
	if err != nil {
		d.specErr = err
		// Keep what can be read so the size is still known.
		d.spec = lenientSpec(key.spec)
	} else {
		d.spec, d.source = spec, spec.SourceHash()
	}
	d.rec, d.recordErr = ParseStatus(key.status)
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= definitionCacheSize {
		c.entries = make(map[definitionText]parsedDefinition, 64)
	}
	c.entries[key] = d
	c.mu.Unlock()
	return d.clone()
}

// clone copies what the caller could change in place, so that no view
// shares memory with the cache.
func (d parsedDefinition) clone() parsedDefinition {
	if d.spec.Runtime != nil {
		rt := *d.spec.Runtime
		if rt.TTLSeconds != nil {
			ttl := *rt.TTLSeconds
			rt.TTLSeconds = &ttl
		}
		d.spec.Runtime = &rt
	}
	if d.spec.Spare != nil {
		spare := *d.spec.Spare
		d.spec.Spare = &spare
	}
	if d.rec.Elastic != nil {
		el := *d.rec.Elastic
		d.rec.Elastic = &el
	}
	if d.rec.History != nil {
		d.rec.History = &History{Samples: slices.Clone(d.rec.History.Samples)}
	}
	d.rec.Members = slices.Clone(d.rec.Members)
	d.rec.Errors = slices.Clone(d.rec.Errors)
	if d.rec.UpdatedAt != nil {
		at := *d.rec.UpdatedAt
		d.rec.UpdatedAt = &at
	}
	return d
}

// observeDefinition reads the pool's definition (cm may be nil) into v:
// Defined, Spec, SpecError, Source, Recorded, RecordedError and the
// pool-level Problems.
func observeDefinition(v *PoolView, cm *corev1.ConfigMap) {
	v.Defined, v.Spec, v.SpecError, v.Source = false, Spec{}, nil, ""
	v.Recorded, v.RecordedError, v.Problems, v.Size = Status{}, nil, nil, 0
	if cm == nil {
		v.Problems = append(v.Problems, fmt.Sprintf("no pool definition: ConfigMap %s does not exist", ConfigMapName(v.Name)))
		return
	}
	v.Defined = true
	d := definitions.parse(cm)
	v.Spec, v.Source = d.spec, d.source
	if d.specErr != nil {
		v.SpecError = d.specErr
		v.Problems = append(v.Problems, "spec: "+d.specErr.Error())
	}
	if d.recordErr != nil {
		v.RecordedError = d.recordErr
		v.Problems = append(v.Problems, "status: "+d.recordErr.Error())
	}
	v.Recorded = d.rec
	v.Size = EffectiveSize(v.Spec, v.Recorded.Elastic)
}

// lenientSpec reads what it can of a spec that does not validate, so that a
// broken definition still shows its size and image (redacted: an image with
// credentials is one reason a definition does not validate).
func lenientSpec(data string) Spec {
	var s struct {
		Image string `json:"image"`
		Size  int    `json:"size"`
	}
	_ = yamlUnmarshalLenient(data, &s)
	if s.Size < 0 || s.Size > MaxPoolSize {
		s.Size = 0
	}
	return Spec{Image: RedactImage(s.Image), Size: s.Size}
}
