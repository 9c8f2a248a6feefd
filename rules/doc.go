// Package rules reads rule packs: the YAML files, scripts and attachments
// of a scenario, as authors write them, into a checked and compiled pack
// every session of the engine shares.
//
// Loading is a pipeline, in the manner of expr's parse, check, compile:
//
//   - decode (decode.go): YAML nodes into the model types of model.go and
//     panel.go, by reflection over their yaml tags, keeping every value's
//     file:line:col. Settings that take one of a few words are typed enums
//     (enum.go); actions are one interface with a type per kind
//     (action.go); a rule's trigger: is a typed Trigger (trigger.go). YAML
//     merge keys are expanded.
//
//   - compile (compile.go): defaults (compiler.defaults, the one place a
//     pack's defaults are set: an enum's zero value is its default; a say
//     a script returns without a kind is of kind "script"),
//     constants resolved, every expression compiled against the typed
//     environment of env.go, every script reference checked against the
//     pack's scripts.
//
//   - check (check.go): a method per section validates it and builds the
//     indexes the engine reads (roles by id, rules by trigger).
//
//   - bind (inputs.go, bind.go): a session's own material, the pack's
//     declared inputs, checked against their types and limits when the
//     session starts. A duration or number that names an input is
//     compiled again from the pack's own bytes (memfs.go) with the
//     session's value, so every check above holds for it too.
//
// Every problem found on the way is collected into one ErrorList, sorted
// by position, so an author fixes them all in one pass.
//
// The compiled pack is the model with its compiled parts filled in, not a
// second tree of types: every enum is already typed when decoded, every
// expression compiled in place, every reference (a turn's role, a phase's
// job) resolved and every lookup by name indexed. A separate program
// type would restate each section's fields a second time, a contract in
// two places that would drift; the positions the engine still reads are
// the ones its runtime errors cite. A *Pack that Load
// returns is immutable and safe to share between sessions and goroutines;
// its Env (one per session) is not.
//
// # What is API
//
// Hosts and tools use a small part of what this package exports:
//
//   - Load and LoadFS, which return a *Pack or an ErrorList of Error
//     values at their Pos (file:line:col), and the Pack's methods;
//   - Supplied, Pack.Bind, Inputs and InputErrors: a session's inputs;
//   - the coverage list (CoverItem, CoverKind), the candidate model
//     (CandidateModel, Dist), the workspace and provider settings
//     (Workspace, Provider), and At, Number and EventData for files that
//     embed pack values (pack tests, replies scripts);
//   - JSONSchema, and the helpers that word errors the way the loader
//     does: DidYouMean, Nearest, FormatClock, ParseDuration.
//
// Everything else exported is the compiled pack's model: the engine, a
// package of its own, reads it field by field, so it is exported, but it
// is not an API. It changes with the engine and is never seen by authors,
// who write YAML (docs/packs.md, docs/pack.schema.json) and read errors
// in their own words (views.go).
package rules
