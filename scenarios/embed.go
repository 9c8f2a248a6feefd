// Package scenarios holds the bundled rule packs, one folder each, embedded
// in the binary so `baton dryrun dayone` works anywhere.
package scenarios

import "embed"

// FS holds every bundled pack folder.
//
//go:embed all:dayone all:hotseat
var FS embed.FS

// Names lists the bundled packs.
func Names() []string { return []string{"dayone", "hotseat"} }
