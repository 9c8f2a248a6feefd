package rules

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

func refValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

// Duration is a span of time in a pack: a literal ("12s", "800ms", "1m30s",
// "03:00", "03:00.5") or the name of a duration constant, so that changing
// one constant retimes every rule that uses it.
type Duration struct {
	Pos
	MS  int64
	Ref string // constant name, resolved at compile
	set bool
	// broken marks a duration already reported as wrong, so checks of
	// its value stay quiet instead of piling knock-on errors on it.
	broken bool
}

// IsSet reports whether the duration was written in the pack.
func (d Duration) IsSet() bool { return d.set }

// ok reports whether the duration can be checked: not already reported.
func (d Duration) ok() bool { return !d.broken }

func (d *Duration) decodeNode(dec *decoder, n *yaml.Node) {
	d.Pos = dec.pos(n)
	if n.Kind != yaml.ScalarNode {
		dec.errorf(n, "expected a duration, found %s", kindName(n))
		d.broken = true
		return
	}
	d.set = true
	if isIdent(n.Value) {
		d.Ref = n.Value
		return
	}
	ms, err := ParseDuration(n.Value)
	if err != nil {
		dec.errorf(n, "%v", err)
		d.broken = true
		return
	}
	d.MS = ms
}

// ParseDuration reads a pack duration literal into milliseconds.
func ParseDuration(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if strings.Contains(s, ":") {
		return parseClock(s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want a number with a unit (800ms, 12s, 1m30s) or mm:ss", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("bad duration %q: negative", s)
	}
	return d.Milliseconds(), nil
}

// durationUnits maps the ways people write a unit of time to the one a
// pack duration takes.
var durationUnits = map[string]string{
	"ms": "ms", "msec": "ms", "msecs": "ms", "millis": "ms", "millisecond": "ms", "milliseconds": "ms",
	"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
	"h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
}

var durationPart = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*([a-z]+)`)

// durationFix rewrites a duration written as people write one ("12 sec",
// "1 min 30 secs") as a pack writes it ("12s", "1m30s"), if it is one.
func durationFix(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	rest := durationPart.ReplaceAllStringFunc(s, func(part string) string {
		m := durationPart.FindStringSubmatch(part)
		unit, ok := durationUnits[m[2]]
		if !ok {
			return part
		}
		b.WriteString(m[1] + unit)
		return " "
	})
	rest = strings.NewReplacer(",", " ", " and ", " ").Replace(" " + rest + " ")
	if b.Len() == 0 || strings.TrimSpace(rest) != "" {
		return "", false
	}
	if _, err := ParseDuration(b.String()); err != nil {
		return "", false
	}
	return b.String(), true
}

// parseClock reads mm:ss, mm:ss.f or hh:mm:ss.
func parseClock(s string) (int64, error) {
	parts := strings.Split(s, ":")
	bad := fmt.Errorf("bad time %q: want mm:ss, mm:ss.f or hh:mm:ss", s)
	if len(parts) > 3 {
		return 0, bad
	}
	var total float64
	for i, p := range parts {
		if p == "" {
			return 0, bad
		}
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, bad
		}
		if i < len(parts)-1 && v != math.Trunc(v) {
			return 0, bad
		}
		if i > 0 && v >= 60 {
			return 0, bad
		}
		total = total*60 + v
	}
	if total > 1e9 {
		return 0, bad
	}
	return int64(math.Round(total * 1000)), nil
}

// Number is a numeric pack value: a literal or the name of a constant.
type Number struct {
	Pos
	Value float64
	Ref   string
	set   bool
}

// IsSet reports whether the number was written in the pack.
func (v Number) IsSet() bool { return v.set }

// Int is the number as a count (checks refuse a fractional one where a
// count is meant).
func (v Number) Int() int { return int(v.Value) }

func (v *Number) decodeNode(dec *decoder, n *yaml.Node) {
	v.Pos = dec.pos(n)
	if n.Kind != yaml.ScalarNode {
		dec.errorf(n, "expected a number, found %s", kindName(n))
		return
	}
	v.set = true
	if isIdent(n.Value) {
		v.Ref = n.Value
		return
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		dec.errorf(n, "expected a number or a constant name, found %q", n.Value)
		return
	}
	v.Value = f
}

// IsIdent says whether s is an identifier as packs write names: letters,
// digits and '_', not starting with a digit.
func IsIdent(s string) bool { return isIdent(s) }

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// FormatClock renders ms as mm:ss.s, the timeline's notation.
func FormatClock(ms int64) string {
	neg := ""
	if ms < 0 {
		neg, ms = "-", -ms
	}
	return fmt.Sprintf("%s%02d:%02d.%d", neg, ms/60000, (ms/1000)%60, (ms%1000)/100)
}
