package rules

// Warnings are what loads but is probably a mistake: a pack with one runs,
// and does something its author most likely did not mean. Each family is
// a function of its own, in a file of its own; Load runs them all on a
// pack that loaded without errors and keeps what they find in
// Pack.Warnings.
var warningChecks = [...]func(c *compiler, w *ErrorList){
	warnTriggerTypos,
	warnUnusedLineSets,
	warnEmptyRoles,
	warnSilenceWithoutQuestion,
	warnFixedLineGuardrails,
	warnDuplicateKeywords,
}

// checkedTurn is a turn the checker saw, with what owns it for messages.
type checkedTurn struct {
	t    *TurnSpec
	what string
}

func (c *compiler) warnings() ErrorList {
	var w ErrorList
	for _, check := range warningChecks {
		check(c, &w)
	}
	if len(w) == 0 {
		return nil
	}
	return w.sorted()
}
