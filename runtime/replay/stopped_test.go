package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/internal/wal"
	"github.com/batonhq/baton/runtime/replay"
)

// A recording that stops without the session's end (the server stopped,
// the log was cut short) is played only as far as it goes: the what-if
// ends at its last input, and the silence after it is never counted as
// the pack's. Played on to the pack's end, a longer silence timeout
// showed more nudges than the recording, all of them in time the
// recording never reached.
func TestWhatIfStopsWhereTheRecordingStops(t *testing.T) {
	const dir = "../../scenarios/dayone"
	_, p, res := recordSession(t, dir)
	// The log as a server that stopped at 03:00 left it: live, no end.
	k := 0
	for k < len(res.Inputs) && res.Inputs[k].T <= 180_000 {
		k++
	}
	d, err := wal.OpenDir(t.TempDir(), wal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const id = "stopped"
	l, err := d.Create(wal.Header{Engine: engine.Version, Pack: p.Name, PackRef: dir, PackHash: p.Hash,
		Options: engine.Options{Seed: 3}, SessionID: id, CandidateID: "dryrun", StartWall: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range k {
		seq, err := l.Append(res.Inputs[i], false)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.AppendStep(seq, wal.Digest(res.Steps[i].Effects, res.Steps[i].Err)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rec := openRecording(t, d.LivePath(id), p)
	last := rec.Result.Inputs[len(rec.Result.Inputs)-1].T

	q := loadPack(t, editedCopy(t, dir, "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 40s"))
	wi, err := rec.WhatIf(context.Background(), q, replay.WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range wi.Result.Records {
		if r.T > last {
			t.Fatalf("the what-if went on past the recording's last input at %d: %s at %d", last, r.Type, r.T)
		}
	}
	if wi.Result.EndReason() != replay.EndStopped {
		t.Errorf("what-if ended %q, want %q", wi.Result.EndReason(), replay.EndStopped)
	}
	if !strings.Contains(strings.Join(wi.Notes, "\n"), "the recording stops at 03:00") {
		t.Errorf("no note says where the recording stops: %q", wi.Notes)
	}
	if s := wi.Summary(replay.DiffOptions{}); s.Nudges[1] > s.Nudges[0] {
		t.Errorf("a longer silence timeout nudged more: %d recorded, %d what-if", s.Nudges[0], s.Nudges[1])
	}
}

// A session ended from outside (the candidate left, an operator stopped
// it) is ended at the same time in the what-if, with the same reason.
func TestWhatIfEndsWhereTheRecordingWasEnded(t *testing.T) {
	const dir = "../../scenarios/dayone"
	p := loadPack(t, dir)
	res, err := dryrun.Run(p, dryrun.Options{Seed: 3, End: &dryrun.EndAt{T: 120_000, Reason: "candidate left"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.EndMS != 120_000 {
		t.Fatalf("the dry run ended at %d, want 120000 (%s)", res.EndMS, res.EndReason())
	}
	path, err := replay.SaveDryRun(t.TempDir(), dir, p, 3, time.Unix(0, 0), res)
	if err != nil {
		t.Fatal(err)
	}
	rec := openRecording(t, path, p)
	q := loadPack(t, editedCopy(t, dir, "SILENCE_TIMEOUT: 12s", "SILENCE_TIMEOUT: 40s"))
	wi, err := rec.WhatIf(context.Background(), q, replay.WhatIfOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wi.Result.EndMS != 120_000 || wi.Result.EndReason() != res.EndReason() {
		t.Errorf("what-if ended at %d (%s), want 120000 (%s)", wi.Result.EndMS, wi.Result.EndReason(), res.EndReason())
	}
	if !strings.Contains(strings.Join(wi.Notes, "\n"), "ended from outside at 02:00.0 (candidate left); the what-if ends it there too") {
		t.Errorf("no note says where the session was ended: %q", wi.Notes)
	}
}
