package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/batonhq/baton/rules"
)

// tickets is a turn budget split across roles: every ticket-holding role
// gets at least one, the surplus goes by weight (or as the pack's script
// decides), and rules spend them; a role with none left is finished.
type tickets struct {
	counts []int // by pack role index
}

func (tk *tickets) init(s *Session) { tk.counts = make([]int, len(s.p.Roles)) }

func (tk *tickets) of(s *Session, role string) int {
	if i := s.roleIdx(role); i >= 0 {
		return tk.counts[i]
	}
	return 0
}

func (tk *tickets) add(s *Session, role string, n int) {
	if i := s.roleIdx(role); i >= 0 {
		tk.counts[i] = max(0, tk.counts[i]+n)
	}
}

func (tk *tickets) total() int {
	n := 0
	for _, c := range tk.counts {
		n += c
	}
	return n
}

// TicketsLeft is how many tickets the session's roles still hold; a
// sweep reports it as the session ends. Rules spend tickets without an
// effect, so the count is read here rather than from the effects.
func (s *Session) TicketsLeft() int { return s.tickets.total() }

// finished is true for a ticket-holding role whose tickets ran out.
func (tk *tickets) finished(s *Session, role string) bool {
	t := s.p.Tickets
	return t != nil && slices.Contains(t.Roles, role) && tk.of(s, role) <= 0
}

// holders lists the ticket-holding roles with (left) or without tickets.
func (tk *tickets) holders(s *Session, left bool) []string {
	t := s.p.Tickets
	if t == nil {
		if left {
			return s.p.RoleIDs()
		}
		return nil
	}
	var out []string
	for _, r := range t.Roles {
		if (tk.of(s, r) > 0) == left {
			out = append(out, r)
		}
	}
	return out
}

// distribute splits the budget at the session's start.
func (tk *tickets) distribute(s *Session) {
	t := s.p.Tickets
	if t == nil {
		return
	}
	total := max(int(t.Total.Value), len(t.Roles))
	counts := splitTickets(total, t)
	if t.Distribute != nil {
		if c, ok := s.scriptTickets(t, total); ok {
			counts = c
		}
	}
	data := map[string]int{}
	for i, r := range t.Roles {
		tk.counts[s.roleIdx(r)] = counts[i]
		data[r] = counts[i]
	}
	raw, _ := json.Marshal(data) // json sorts map keys
	s.emit(Effect{Type: EffectTickets, Data: raw, Reason: fmt.Sprintf("%d tickets", total)})
}

// splitTickets gives every role one ticket and shares the surplus by weight
// (largest remainder, ties to the earlier role).
func splitTickets(total int, t *rules.Tickets) []int {
	n := len(t.Roles)
	counts := make([]int, n)
	weights := make([]float64, n)
	sum := 0.0
	for i, r := range t.Roles {
		counts[i] = 1
		weights[i] = 1
		for _, w := range t.Weights {
			if w.ID == r {
				weights[i] = w.Weight.Value
			}
		}
		sum += weights[i]
	}
	surplus := total - n
	if surplus <= 0 || sum == 0 {
		return counts
	}
	rem := make([]float64, n)
	given := 0
	for i := range counts {
		q := float64(surplus) * weights[i] / sum
		f := math.Floor(q)
		counts[i] += int(f)
		given += int(f)
		rem[i] = q - f
	}
	for ; given < surplus; given++ {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		counts[best]++
		rem[best] = -1
	}
	return counts
}

func (s *Session) scriptTickets(t *rules.Tickets, total int) ([]int, bool) {
	arg := s.scriptArg("")
	roles := make([]any, len(t.Roles))
	weights := map[string]any{}
	for i, r := range t.Roles {
		roles[i] = r
		weights[r] = 1.0
	}
	for _, w := range t.Weights {
		weights[w.ID] = w.Weight.Value
	}
	arg.set("total", total)
	arg.set("ticket_roles", roles)
	arg.set("weights", weights)
	const hook = "tickets.distribute"
	out, ok := s.callScript(&t.Distribute.Script, arg, hook)
	if !ok {
		s.scriptFailed(t.Distribute.OnError, hook)
		return nil, false
	}
	m, isMap := out.(map[string]any)
	if !isMap {
		s.badResult(&t.Distribute.Script, hook, "want {role: count}, got %s", rules.Describe(out))
		return nil, false
	}
	counts := make([]int, len(t.Roles))
	sum := 0
	for i, r := range t.Roles {
		f, _ := m[r].(int64)
		if ff, isF := m[r].(float64); isF {
			f = 0 // NaN, infinities and huge numbers convert differently per machine
			if ff >= 1 && ff <= float64(total) {
				f = int64(ff)
			}
		}
		if f < 1 {
			s.badResult(&t.Distribute.Script, hook, "%s gets %v; every role needs at least 1", r, m[r])
			return nil, false
		}
		counts[i] = int(f)
		sum += int(f)
	}
	if sum != total {
		s.badResult(&t.Distribute.Script, hook, "the counts add up to %d, not %d", sum, total)
		return nil, false
	}
	return counts, true
}
