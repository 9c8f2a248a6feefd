package scenarios_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/runtime/dryrun"
	"github.com/batonhq/baton/runtime/events"
	"github.com/batonhq/baton/runtime/record"
)

func loadHotSeat(t *testing.T) (*rules.Pack, []events.Timed) { return loadBundled(t, "hotseat") }

func ticketsOf(t *testing.T, res *record.Result) map[string]int {
	t.Helper()
	for _, r := range res.Records {
		if r.Type == engine.EffectTickets {
			var m map[string]int
			if err := json.Unmarshal(r.Data, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatal("no tickets effect")
	return nil
}

// The split is the pack's script (scripts/tickets.js); the table checks it
// against the seed's rule, including weights and a total below the number
// of jurors.
func TestHotSeatTicketSplit(t *testing.T) {
	cases := []struct {
		name    string
		roles   []string
		total   float64
		weights map[string]float64
		want    map[string]int
	}{
		{"seed example", []string{"marcus", "priya", "james"}, 5, nil, map[string]int{"marcus": 2, "priya": 2, "james": 1}},
		{"two jurors, one question raised to two", []string{"marcus", "priya"}, 1, nil, map[string]int{"marcus": 1, "priya": 1}},
		{"weights", []string{"marcus", "priya", "james"}, 9, map[string]float64{"marcus": 1, "priya": 2, "james": 3}, map[string]int{"marcus": 2, "priya": 3, "james": 4}},
		{"exact", []string{"marcus", "priya", "james"}, 3, nil, map[string]int{"marcus": 1, "priya": 1, "james": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := loadHotSeat(t)
			p.Tickets.Roles = c.roles
			p.Tickets.Total.Value = c.total
			p.Tickets.Weights = nil
			for r, w := range c.weights {
				p.Tickets.Weights = append(p.Tickets.Weights, rules.Weight{ID: r, Weight: rules.Number{Value: w}})
			}
			for _, distribute := range []bool{true, false} {
				if !distribute {
					p.Tickets.Distribute = nil // the built-in split must agree
				}
				res, err := dryrun.Run(p, dryrun.Options{})
				if err != nil {
					t.Fatal(err)
				}
				got := ticketsOf(t, res)
				if len(got) != len(c.want) {
					t.Fatalf("script=%v: got %v, want %v", distribute, got, c.want)
				}
				for r, n := range c.want {
					if got[r] != n {
						t.Fatalf("script=%v: got %v, want %v", distribute, got, c.want)
					}
				}
			}
		})
	}
}

// Two jurors with one question requested: raised to two tickets, one
// each, so the first juror transfers and the second ends the panel.
func TestHotSeatTwoJurors(t *testing.T) {
	p, evs := loadHotSeat(t)
	p.Tickets.Roles = []string{"marcus", "priya"}
	p.Tickets.Total.Value = 1
	res, err := dryrun.Run(p, dryrun.Options{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	var transfers, ends int
	var verdict bool
	for _, r := range res.Records {
		switch {
		case r.Type == engine.EffectToolResult && r.Kind == "transfer" && !r.IsError:
			transfers++
		case r.Type == engine.EffectToolResult && r.Kind == "endPanel":
			ends++
		case r.Type == engine.EffectReport && r.Kind == "verdict":
			verdict = true
		case r.Type == engine.EffectHandoff && r.Agent == "james":
			t.Fatal("james holds no tickets and must never get the floor")
		}
	}
	if transfers != 1 || ends != 1 || !verdict {
		t.Fatalf("transfers=%d ends=%d verdict=%v", transfers, ends, verdict)
	}
}

// The verdict, and the whole panel, are deterministic for a fixed script.
func TestHotSeatDeterministic(t *testing.T) {
	p, evs := loadHotSeat(t)
	var first []byte
	for i := 0; i < 3; i++ {
		res, err := dryrun.Run(p, dryrun.Options{Events: evs})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := record.WriteJSONL(&b, res.Records, record.FormatOptions{Verbose: true}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.Bytes()
			if !bytes.Contains(first, []byte(`"type":"report","kind":"verdict"`)) {
				t.Fatal("no verdict")
			}
			continue
		}
		if !bytes.Equal(first, b.Bytes()) {
			t.Fatalf("run %d differs", i)
		}
	}
}
