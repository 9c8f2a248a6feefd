package scenarios_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
	"github.com/batonhq/baton/scenarios"
)

// outcomes says, for every bundled pack, what a finished session of it
// has produced. A session that idles to its hard limit, or closes without
// its verdict, is a broken product whatever its timeline looked like.
var outcomes = map[string]func(recs []record.Record) error{
	"dayone": func(recs []record.Record) error {
		return endsWith(recs, "session_complete")
	},
	"boardroom": func(recs []record.Record) error {
		if err := endsWith(recs, "session_complete"); err != nil {
			return err
		}
		for _, r := range recs {
			if r.Type == engine.EffectAgentMessage && r.Agent == "moderator" && r.Kind == "closing" {
				return nil
			}
		}
		return fmt.Errorf("no closing debrief")
	},
	"brain": func(recs []record.Record) error {
		// A user who leaves, or one who never asks, ends the session;
		// every exchange that started has ended by then.
		if endsWith(recs, "user_left") != nil {
			if err := endsWith(recs, "idle"); err != nil {
				return err
			}
		}
		open := map[string]bool{}
		for _, r := range recs {
			if r.Type != engine.EffectSequence {
				continue
			}
			var x engine.Exchange
			if err := json.Unmarshal(r.Data, &x); err != nil {
				return err
			}
			switch r.Kind {
			case engine.SeqStart:
				open[x.RunID] = true
			case engine.SeqCompleted, engine.SeqCancelled, engine.SeqTimeout:
				delete(open, x.RunID)
			}
		}
		if len(open) > 0 {
			return fmt.Errorf("exchanges never ended: %v", open)
		}
		return nil
	},
	"training": func(recs []record.Record) error {
		// The interviewer closes the session, or it ends once they
		// have gone quiet; never at the hard limit.
		if endsWith(recs, "the interviewer closed the session") != nil {
			return endsWith(recs, "the interviewer went quiet")
		}
		return nil
	},
	"hotseat": func(recs []record.Record) error {
		if err := endsWith(recs, "verdict"); err != nil {
			return err
		}
		for _, r := range recs {
			if r.Type == engine.EffectReport && r.Kind == "verdict" {
				return nil
			}
		}
		return fmt.Errorf("no verdict report")
	},
}

func endsWith(recs []record.Record, reason string) error {
	if len(recs) == 0 {
		return fmt.Errorf("no effects")
	}
	last := recs[len(recs)-1]
	if last.Type != engine.EffectSessionEnd || last.Reason != reason {
		return fmt.Errorf("last effect at %s is %s %q, want session_end %q", rules.FormatClock(last.T), last.Type, last.Reason, reason)
	}
	return nil
}

// failingInTurn scripts a model whose calls fail in turn: a rate limit, a
// server error and a call that never answers (the engine's timeout), then
// one the pack's own model answers, over and over.
func failingInTurn(n int) []dryrun.Reply {
	var out []dryrun.Reply
	for call := 1; call <= n; call++ {
		switch call % 4 {
		case 1:
			out = append(out, dryrun.Reply{Call: call, Error: "rate_limit"})
		case 2:
			out = append(out, dryrun.Reply{Call: call, Error: "server"})
		case 3:
			out = append(out, dryrun.Reply{Call: call, NoReply: true})
		}
	}
	return out
}

// TestEveryPackReachesItsOutcome runs every bundled pack with its own
// candidate and with a silent one, against its scripted model and against
// a model whose calls keep failing, and checks that each session ends
// with the pack's outcome.
func TestEveryPackReachesItsOutcome(t *testing.T) {
	for _, name := range scenarios.Names() {
		outcome, ok := outcomes[name]
		if !ok {
			t.Errorf("pack %s: add how its sessions end to outcomes", name)
			continue
		}
		p, builtin := loadBundled(t, name)
		for _, cand := range []struct {
			name   string
			events []events.Timed
		}{{"own candidate", builtin}, {"silent candidate", nil}} {
			for _, model := range []struct {
				name    string
				replies []dryrun.Reply
			}{{"scripted model", nil}, {"failing model", failingInTurn(400)}} {
				t.Run(name+"/"+cand.name+"/"+model.name, func(t *testing.T) {
					res, err := dryrun.Run(p, dryrun.Options{Events: cand.events, Replies: model.replies})
					if err != nil {
						t.Fatal(err)
					}
					if err := outcome(res.Records); err != nil {
						var tl []byte
						for i := range res.Records {
							tl = append(tl, record.TextLine(&res.Records[i])+"\n"...)
						}
						t.Fatalf("%v\n%s", err, tl)
					}
				})
			}
		}
	}
}

// loadBundled loads a bundled pack and its built-in candidate.
func loadBundled(t testing.TB, name string) (*rules.Pack, []events.Timed) {
	t.Helper()
	p, err := rules.Load(os.DirFS(name), ".")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := packEvents(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, evs
}

func packEvents(p *rules.Pack) ([]events.Timed, error) {
	if p.DryRun.Candidate == "" {
		return nil, nil
	}
	f, err := p.FS.Open(p.DryRun.Candidate)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return events.ReadAll(f)
}
