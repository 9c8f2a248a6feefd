package main

// ANSI colours for a terminal; paint leaves text alone when colour is off
// (piped output, NO_COLOR, TERM=dumb), so what scripts read never changes.
const (
	red    = "31"
	green  = "32"
	yellow = "33"
	bold   = "1"
)

func (c *cli) paint(code, text string) string {
	if !c.color {
		return text
	}
	return "\033[" + code + "m" + text + "\033[0m"
}
