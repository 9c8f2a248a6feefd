package packtest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/internal/sim"
	"github.com/batonhq/baton/runtime/packs"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/scenarios"
)

// examples holds the files the README points readers at.
const examples = "../../examples/files"

// The README's example candidate and scripted model load, and play a
// whole session of the bundled DayOne pack, each doing what its comments
// say: the candidate speaks, types and submits code; the model fails
// once, answers the tech lead slowly every time, and says the BA's
// interruption in its own words.
func TestExampleFilesPlayDayOne(t *testing.T) {
	p, err := (&packs.Resolver{Bundled: scenarios.FS}).Open("dayone")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(examples, "my-candidate.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := events.ReadFile("my-candidate.jsonl", f)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, ev := range evs {
		types[ev.Event.Type]++
	}
	for _, typ := range []string{"mic_state_changed", "speech_end", "typing_state_changed", "code_submitted", "candidate_message"} {
		if types[typ] == 0 {
			t.Errorf("my-candidate.jsonl has no %s event", typ)
		}
	}
	data, err := os.ReadFile(filepath.Join(examples, "replies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	replies, err := sim.ReadRepliesFile("replies.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	// RunContext checks every event against the pack before it starts.
	res, err := dryrun.RunContext(context.Background(), p, dryrun.Options{Events: evs, Replies: replies})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.EndReason(); r != "session_complete" {
		t.Errorf("session ended %q", r)
	}
	has := func(what string, ok func(r *record.Record) bool) int {
		n := 0
		for i := range res.Records {
			if ok(&res.Records[i]) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no %s in the timeline", what)
		}
		return n
	}
	has("scripted failure", func(r *record.Record) bool {
		return r.Type == engine.EffectAdapterError && r.Agent == "qa" && strings.Contains(r.Reason, "server")
	})
	// Every slow reply of the tech lead is covered: more than one shows
	// the reply was used again (repeat).
	if n := has("cover line", func(r *record.Record) bool {
		return r.Type == engine.EffectAgentMessage && r.Agent == "tech_lead" && r.Kind == "cover"
	}); n < 2 {
		t.Errorf("%d cover lines, want one for each tech lead reply", n)
	}
	i := slices.IndexFunc(replies, func(r sim.Reply) bool { return r.Role == "ba" })
	if i < 0 {
		t.Fatal("replies.yaml scripts no BA line")
	}
	has("scripted BA interruption", func(r *record.Record) bool {
		return r.Type == engine.EffectAgentMessage && r.Agent == "ba" && r.Kind == "anchor" && r.Text == replies[i].Text
	})
	has("answer to the typed question", func(r *record.Record) bool {
		return r.Type == engine.EffectRouted && r.Agent == "tech_lead" && r.Rule == "R2_ADDRESSED"
	})
}
