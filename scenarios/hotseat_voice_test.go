package scenarios_test

import (
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/dryrun"
)

// The configure job picks each juror's voice into its VOICE slot, and the
// juror speaks with it: the dry run's script picks voices other than the
// written ones (scripts/dryrun.js), and every line a juror says, after
// its configuration, is in the picked voice.
func TestHotSeatJurorsSpeakWithTheirPickedVoice(t *testing.T) {
	p, evs := loadHotSeat(t)
	picked := map[string]string{"marcus": "Fenrir", "priya": "Aoede", "james": "Charon"}
	res, err := dryrun.Run(p, dryrun.Options{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	spoke := map[string]int{}
	for _, r := range res.Records {
		want, juror := picked[r.Agent]
		if r.Type != engine.EffectAgentMessage || !juror {
			continue
		}
		spoke[r.Agent]++
		if r.Voice != want {
			t.Errorf("%s at %dms said %q in voice %q; its configure job picked %s", r.Agent, r.T, r.Text, r.Voice, want)
		}
	}
	if len(spoke) == 0 {
		t.Fatal("no juror spoke")
	}
	for _, r := range res.Records {
		if r.Type == engine.EffectNote && r.Kind == engine.NoteWarning {
			t.Errorf("warning: %s", r.Reason)
		}
	}
}
