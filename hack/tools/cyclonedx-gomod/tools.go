//go:build tools

// Package cyclonedxgomod pins the version of CycloneDX's cyclonedx-gomod that
// make release-snapshot writes each archive's SBOM with. It is a module of its
// own so that the tool's dependencies stay out of ctpool-tui's go.mod;
// hack/tools/cyclonedx-gomod/build builds the binary into the cache.
package cyclonedxgomod

import _ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
