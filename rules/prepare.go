package rules

import (
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Preparation and cover lines: the pack side of turns landing on time.
//
// A scheduled turn (an anchor's, a window's, a silence step's, or a say in
// a rule with at: or every: that asks for it) is known before it is due,
// so its line can be asked of the model a lead time ahead and held. The
// engine releases it at the due time if the request it was made from is
// still the request it would send then; otherwise OnStale decides. Cover
// lines fill the wait when a turn's model is slow.

// Prepare is a turn's own preparation setting: `prepare: 3s`,
// `prepare: off`, or `prepare: {lead: 3s, on_stale: drop}`. What it
// leaves out comes from the pack's llm section.
type Prepare struct {
	Pos
	Lead    Duration     `yaml:"lead"`
	OnStale *StalePolicy `yaml:"on_stale"`
	// Off turns preparation off for this turn.
	Off bool `yaml:"-"`
}

func (p *Prepare) decodeNode(d *decoder, n *yaml.Node) {
	p.Pos = d.pos(n)
	if n.Kind == yaml.ScalarNode {
		if on, ok := scalarBool(n); ok {
			if on {
				d.errorf(n, "prepare takes a lead time (prepare: 3s) or off, not %q", n.Value)
			}
			p.Off = !on
			return
		}
		p.Lead.decodeNode(d, n)
		return
	}
	d.decodeStruct(n, reflect.ValueOf(p).Elem())
}

// Prep is a turn's preparation as the checker resolved it.
type Prep struct {
	LeadMS  int64
	OnStale StalePolicy
}

// Preparation reports how the turn is prepared; ok is false for a turn
// asked for only when due (not scheduled, a fixed line, or turned off).
func (t *TurnSpec) Preparation() (Prep, bool) { return t.prep, t.prep.LeadMS > 0 }

// Cover is llm.cover: when a turn's model answer is later than After, its
// role says a short line from the library (the role's cover lines for
// the turn's kind or "default", else these) so the candidate does not
// sit in silence. At most once per turn.
type Cover struct {
	Pos
	After Duration  `yaml:"after"`
	Lines []LineSet `yaml:"lines"`
}

// MaxPrepareLead bounds a preparation's lead: a line asked for much
// earlier is likely stale by its time, and a lead longer than the model's
// whole budget is never needed.
const MaxPrepareLead = 60_000

// prepare resolves a turn's preparation; scheduled says whether the turn
// is known before it is due, and byDefault whether the pack's llm.prepare
// applies without the turn asking.
func (c *compiler) prepare(t *TurnSpec, what string, scheduled, byDefault bool) {
	l := &c.p.LLM
	own := t.Prepare
	if own != nil && !scheduled {
		c.errorf(own.Pos, "%s: prepare only applies to scheduled turns (anchors, windows, silence steps, a say in a rule with at: or every:); remove it", what)
		return
	}
	if own != nil && !own.Off && t.Line != "" {
		c.errorf(own.Pos, "%s: a turn with a fixed line is said at once and needs no preparation; remove prepare", what)
		return
	}
	if !scheduled || t.Line != "" || (own == nil && !byDefault) || (own != nil && own.Off) {
		return
	}
	lead, policy := l.Prepare, l.OnStale
	if own != nil {
		if own.Lead.IsSet() {
			lead = own.Lead
			if !checkLead(c, lead, what) {
				return
			}
		}
		if own.OnStale != nil {
			policy = *own.OnStale
		}
		if !lead.IsSet() {
			c.errorf(own.Pos, "%s: prepare needs a lead (prepare: 3s), or llm.prepare to default it", what)
			return
		}
	}
	if !lead.ok() || lead.MS < 0 || lead.MS > MaxPrepareLead {
		return // reported where it is written
	}
	t.prep = Prep{LeadMS: lead.MS, OnStale: policy}
}

func checkLead(c *compiler, lead Duration, what string) bool {
	if lead.ok() && (lead.MS < 0 || lead.MS > MaxPrepareLead) {
		c.errorf(lead.Pos, "%s: prepare lead %s must be between 0 and %s", what, formatLead(lead.MS), formatLead(MaxPrepareLead))
		return false
	}
	return true
}

func formatLead(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + "s" }

func (l *LLMConfig) checkPrepare(c *compiler) {
	if l.Prepare.IsSet() {
		checkLead(c, l.Prepare, "llm.prepare")
	}
	l.checkCover(c)
}

func (l *LLMConfig) checkCover(c *compiler) {
	cv := l.Cover
	if cv == nil {
		return
	}
	if cv.After.ok() && cv.After.MS <= 0 {
		c.errorf(cv.Pos, "llm.cover needs a positive after (say after: 1200ms)")
	}
	sets := [][]LineSet{cv.Lines}
	for i := range c.p.Roles {
		sets = append(sets, c.p.Roles[i].Cover)
	}
	for _, list := range sets {
		for _, ls := range list {
			for k, line := range ls.Text {
				// The turn's own line follows at once: a cover that asked
				// something would leave the candidate two questions.
				if strings.Contains(line, "?") || strings.TrimSpace(line) == "" {
					c.errorf(ls.Pos, "cover line %s %d %q must be a short statement that asks nothing", ls.ID, k+1, line)
				}
			}
		}
	}
	lines := 0
	for _, list := range sets {
		for _, ls := range list {
			lines += len(ls.Text)
		}
	}
	if lines == 0 {
		c.errorf(cv.Pos, "llm.cover has no lines: add lines: {default: [\"Let me think about that for a second.\"]} here (by turn kind, or default for any), or cover: lines to the roles")
	}
}

// CoverLines is the library a role's cover line is picked from: its own
// cover lines, then the pack's.
func (p *Pack) CoverLines(r *Role) [][]LineSet {
	if p.LLM.Cover == nil {
		return nil
	}
	return [][]LineSet{r.Cover, p.LLM.Cover.Lines}
}

// KindCover is the kind of an agent message that is a cover line.
const KindCover = "cover"
