package rules

import "strings"

// warnDuplicateKeywords warns of a keyword listed twice in one list
// (ignoring case and surrounding space): a list counts distinct keywords,
// so the second adds nothing, and an author who wrote it twice most
// likely meant it to weigh more, or meant another word.
func warnDuplicateKeywords(c *compiler, w *ErrorList) {
	check := func(pos Pos, what string, list []string) {
		seen := make(map[string]bool, len(list))
		for _, k := range list {
			lk := strings.ToLower(strings.TrimSpace(k))
			if seen[lk] {
				w.add(pos, "%s lists %q twice: a list counts each keyword once, so the second adds nothing; remove it, or write the word you meant", what, k)
				continue
			}
			seen[lk] = true
		}
	}
	for i := range c.p.Roles {
		r := &c.p.Roles[i]
		check(r.Pos, "role "+r.ID+" focus", r.Focus)
	}
	for i := range c.p.Routing {
		r := &c.p.Routing[i]
		for j := range r.Intents {
			in := &r.Intents[j]
			check(in.Pos, "route "+r.ID+" intent "+IntentBranch(r.ID, in)+" keywords", in.Keywords)
		}
	}
}
