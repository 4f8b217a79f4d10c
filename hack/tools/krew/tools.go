//go:build tools

// Package krew pins the version of krew whose own manifest validator
// (validate-krew-manifest) and installer (krew install --manifest --archive)
// check the krew manifest make release-snapshot writes. It is a module of its
// own so that krew's dependencies stay out of ctpool-tui's go.mod;
// hack/tools/krew/build builds both binaries into the cache.
package krew

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
