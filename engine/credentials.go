package engine

import (
	"regexp"
	"strings"
)

// A pool definition is a ConfigMap, readable by everyone who may read
// ConfigMaps in the namespace (vdi-ct-pools.md, Security): it must hold no
// credentials. The one place a definition can carry them by accident is an
// image reference with userinfo (user:password@registry/repo), which
// Validate refuses without echoing it.

// redacted stands for the userinfo of a reference in messages.
const redacted = "REDACTED"

// digestSuffix matches the "@algorithm:hex" that ends a reference by digest.
var digestSuffix = regexp.MustCompile(`@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-fA-F0-9]{32,}$`)

// imageUserinfo reports whether the image reference ref carries userinfo
// (an "@" other than the one of a digest, after an optional scheme such as
// https://), and returns ref with the userinfo replaced by REDACTED.
func imageUserinfo(ref string) (safe string, has bool) {
	scheme, rest := "", ref
	if i := strings.Index(rest, "://"); i >= 0 {
		scheme, rest = rest[:i+3], rest[i+3:]
	}
	digest := digestSuffix.FindString(rest)
	body := strings.TrimSuffix(rest, digest)
	at := strings.LastIndexByte(body, '@')
	if at < 0 {
		return ref, false
	}
	return scheme + redacted + body[at:] + digest, true
}

// RedactImage is ref with its userinfo, if any, replaced by REDACTED: the
// form of an image reference that may be shown or recorded.
func RedactImage(ref string) string {
	safe, _ := imageUserinfo(ref)
	return safe
}

// validateNoCredentials refuses an image reference of the spec (image,
// runtime.template, runtime.image) that carries userinfo, naming the field
// and showing the reference redacted.
func (s *Spec) validateNoCredentials() error {
	refs := []struct{ field, ref string }{{"image", s.Image}}
	if s.Runtime != nil {
		refs = append(refs, struct{ field, ref string }{"runtime.template", s.Runtime.Template}, struct{ field, ref string }{"runtime.image", s.Runtime.Image})
	}
	for _, r := range refs {
		if safe, has := imageUserinfo(r.ref); has {
			return &InvalidError{Field: r.field, Value: safe, Secret: true,
				Reason: "must not hold credentials (user:password@ before the registry): the pool definition is a ConfigMap that everyone who may read ConfigMaps in the namespace can read; " +
					"put the registry credentials in a Secret of type kubernetes.io/dockerconfigjson and name it in imagePullSecrets"}
		}
	}
	return nil
}
