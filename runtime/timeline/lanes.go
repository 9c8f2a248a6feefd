package timeline

import "slices"

// addLanes lays out the run's lanes: the timeline, the pack's roles in
// its order, any other agent an effect names (sorted), the human, then
// the session.
func (b *builder) addLanes() {
	l := b.l
	l.lanes = append(l.lanes, lane{id: laneTimeline, name: "timeline", kind: laneTimeline, rows: 1})
	if b.p != nil {
		for _, r := range b.p.Roles {
			b.roles[r.ID] = true
			name := r.ID
			if r.Name != "" && r.Name != r.ID {
				name = r.ID + " · " + r.Name
			}
			l.lanes = append(l.lanes, lane{id: r.ID, name: name, kind: laneRole, rows: roleRows})
		}
	}
	for _, a := range b.otherAgents() {
		b.roles[a] = true
		l.lanes = append(l.lanes, lane{id: a, name: a, kind: laneRole, rows: roleRows})
	}
	l.lanes = append(l.lanes, lane{id: b.human, name: b.human, kind: laneHuman, rows: humanRows})
	l.lanes = append(l.lanes, lane{id: laneSession, name: "session", kind: laneSession, rows: 1})
}

// otherAgents are the agents the run's effects name that have no lane
// yet (no role of the pack), sorted, so a run drawn without its pack
// still shows who did what.
func (b *builder) otherAgents() []string {
	var extra []string
	for i := range b.res.Records {
		if a := b.res.Records[i].Agent; a != "" && !b.roles[a] && !slices.Contains(extra, a) {
			extra = append(extra, a)
		}
	}
	slices.Sort(extra)
	return extra
}

// laneOf is the lane of an effect agent names: its own, or the session's
// for an effect no role owns.
func (b *builder) laneOf(agent string) string {
	if agent != "" && b.roles[agent] {
		return agent
	}
	return laneSession
}
