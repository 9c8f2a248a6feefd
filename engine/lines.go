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
	rng *rand.Rand
	// said counts lines by the FNV-1a hash of their appendLineKey text:
	// a line's own key string was an allocation per line said. Two lines
	// share a hash with odds of one in 2^64, and then only count as one.
	// Looked up, never ranged over.
	said   map[uint64]int
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
	l.said = map[uint64]int{}
	l.orders = map[lineKey]*lineOrder{}
}

// appendLineKey appends text as lines count it: lower case, with runs of
// white space as one space and none at the ends, so a line said again
// with other spacing or capitals is the same line.
func appendLineKey(dst []byte, text string) []byte {
	space := false
	for i := 0; i < len(text); {
		// ASCII by the byte: decoding every rune was most of the cost.
		b := text[i]
		if b < utf8.RuneSelf {
			i++
			if b == ' ' || b >= '\t' && b <= '\r' {
				space = len(dst) > 0
				continue
			}
			if space {
				dst = append(dst, ' ')
				space = false
			}
			if b >= 'A' && b <= 'Z' {
				b += 'a' - 'A'
			}
			dst = append(dst, b)
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
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
	l.said[l.key(text)]++
}

func (l *lines) key(text string) uint64 {
	l.buf = appendLineKey(l.buf[:0], text)
	h := uint64(14695981039346656037)
	for _, b := range l.buf {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return h
}

// atCap reports whether text has been said as often as the pack allows.
func (l *lines) atCap(s *Session, text string) bool {
	n := s.p.Guardrails.MaxRepeats
	if n <= 0 {
		return false
	}
	return l.said[l.key(text)] >= n
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
