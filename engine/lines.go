package engine

import (
	"math/rand/v2"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton/rules"
)

// lines keeps a panel from saying the same thing over and over: it counts
// every line said, and picks fallback and rewrite lines from their lists,
// the first as written (the author's first choice) and the rest in an
// order drawn once per list and session from the session's seed (so a
// replay draws the same), passing over lines already said
// guardrails.max_repeats times.
type lines struct {
	rng    *rand.Rand
	said   map[string]int // by appendLineKey text; looked up, never ranged over
	orders map[lineKey]*lineOrder
	buf    []byte // the key being looked up, reused: every generated line is checked
}

type lineKey struct{ role, set, key string }

type lineOrder struct {
	perm []int
	next int
}

func (l *lines) init(s *Session) {
	seed := s.opts.Seed
	// Its own stream, so drawing orders never shifts what scripts'
	// Math.random returns.
	l.rng = rand.New(rand.NewPCG(seed, seed^0x6c696e65735f7631))
	l.said = map[string]int{}
	l.orders = map[lineKey]*lineOrder{}
}

// appendLineKey appends text as lines count it: lower case, with runs of
// white space as one space and none at the ends, so a line said again
// with other spacing or capitals is the same line.
func appendLineKey(dst []byte, text string) []byte {
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = len(dst) > 0
			continue
		}
		if space {
			dst = append(dst, ' ')
			space = false
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	return dst
}

// spoken counts a line that was said.
func (l *lines) spoken(text string) {
	l.buf = appendLineKey(l.buf[:0], text)
	l.said[string(l.buf)]++
}

// atCap reports whether text has been said as often as the pack allows.
func (l *lines) atCap(s *Session, text string) bool {
	n := s.p.Guardrails.MaxRepeats
	if n <= 0 {
		return false
	}
	l.buf = appendLineKey(l.buf[:0], text)
	return l.said[string(l.buf)] >= n
}

// pick returns the next line of role's set (fallback or rewrite) named
// key, or "default", that is not at its cap.
func (l *lines) pick(s *Session, role, set string, sets []rules.LineSet, keys ...string) (string, bool) {
	for _, key := range keys {
		list, ok := rules.FindLines(sets, key)
		if !ok {
			continue
		}
		k := lineKey{role, set, key}
		o := l.orders[k]
		if o == nil {
			o = &lineOrder{perm: make([]int, len(list))}
			for i, j := range l.rng.Perm(len(list) - 1) {
				o.perm[i+1] = j + 1
			}
			l.orders[k] = o
		}
		for range list {
			line := list[o.perm[o.next]]
			o.next = (o.next + 1) % len(list)
			if !l.atCap(s, line) {
				return line, true
			}
		}
	}
	return "", false
}
