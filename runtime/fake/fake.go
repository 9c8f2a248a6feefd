// Package fake is the former name of the simulated model's reply script.
//
// Deprecated: use dryrun.Reply and dryrun.ReadReplies; the simulated
// model and voice are runtime/internal/sim.
package fake

import "github.com/batonhq/baton/runtime/internal/sim"

// Reply is dryrun.Reply.
//
// Deprecated: use dryrun.Reply.
type Reply = sim.Reply
