package engine

import (
	"encoding/json"

	"github.com/batonhq/baton/rules"
)

// Rules and actions. Every action a pack (or a script) can take is
// executed here and nowhere else: one case per action type of rules.

func (s *Session) fireRules(t rules.Trigger) {
	for _, r := range s.p.RulesOn(t) {
		if s.ended {
			return
		}
		s.runRule(r)
	}
}

func (s *Session) runRule(r *rules.Rule) {
	if !s.evalBool(&r.When, "") {
		return
	}
	s.coverage.hit(s, rules.CoverRule, r.ID)
	for _, a := range r.Do {
		if s.ended {
			return
		}
		s.do(a, r.ID)
	}
}

// runHandler runs a job's handler actions with its args and result in
// scope.
func (s *Session) runHandler(list rules.Actions, rule string, args map[string]any, result any) {
	defer s.env.Scope(rules.Scope{Args: args, Result: result})()
	for _, a := range list {
		if s.ended {
			return
		}
		s.do(a, rule)
	}
}

// do performs one action on behalf of rule.
func (s *Session) do(a rules.Action, rule string) {
	s.prep.acted = true
	switch a := a.(type) {
	case *rules.SayAction:
		s.enqueue(s.newTurn(&a.Turn, rule, false))
	case *rules.SetAction:
		v, err := s.env.Eval(&a.Value.Expr)
		if err == nil {
			err = s.env.SetVar(a.Var, v)
		}
		if err != nil {
			s.note(rule, "set "+a.Var+": "+err.Error())
		}
	case *rules.EmitAction:
		e := Effect{Type: EffectNote, Rule: rule, Text: a.Text}
		if a.Level == rules.LevelWarning {
			e.Kind = NoteWarning
		}
		s.emit(e)
	case *rules.EndAction:
		s.end(a.Reason, rule)
	case *rules.RunAction:
		s.runScript(rule, &a.Hook)
	case *rules.ToolResultAction:
		v, err := s.env.Eval(&a.Value.Expr)
		if err != nil {
			s.note(rule, err.Error())
			return
		}
		if s.tools.call != nil {
			s.tools.call.result, _ = json.Marshal(v)
		}
	case *rules.ToolErrorAction:
		if s.tools.call != nil {
			caller := ""
			if tv := s.env.Tool(); tv != nil {
				caller = tv.Caller
			}
			s.tools.call.errText = s.render(&a.Text, caller)
		}
	case *rules.TicketAction:
		if role, ok := s.evalString(&a.Role, rule); ok {
			s.tickets.add(s, role, a.Add)
		}
	case *rules.FloorAction:
		if role, ok := s.evalString(&a.Role, rule); ok {
			s.handoff.give(s, role, rule)
		}
	case *rules.InjectAction:
		if role, ok := s.evalString(&a.Role, rule); ok && s.roleIdx(role) >= 0 {
			s.queueInstruction(role, s.render(&a.Text, role))
		}
	case *rules.SequenceAction:
		s.seqs.start(s, a, rule)
	case *rules.CancelSequenceAction:
		s.seqs.cancel(s, a, rule)
	case *rules.JobAction:
		s.jobs.begin(s, a.Job(), s.evalArgs(a.Args, nil), a.OverlapPolicy(), rule)
	case *rules.MemoryAction:
		if role, ok := s.evalString(&a.Role, rule); ok && s.roleIdx(role) >= 0 {
			s.remember(role, s.render(&a.Text, role))
		}
	case *rules.SlotAction:
		role := ""
		if a.Role.Set() {
			role, _ = s.evalString(&a.Role, rule)
		}
		v := s.render(&a.Value, role)
		s.setSlot(role, a.Name, v)
		s.checkVoiceSlot(rule, role, a.Name, v)
	case *rules.WriteAction:
		s.files.write(s, rule, a, rules.OpWrite)
	case *rules.AppendAction:
		s.files.write(s, rule, (*rules.WriteAction)(a), rules.OpAppend)
	case *rules.RecordAction:
		if v, err := s.env.Eval(&a.Value.Expr); err == nil {
			s.record(a.Name, v)
		}
	case *rules.ReportAction:
		v, err := s.env.Eval(&a.Value.Expr)
		if err != nil {
			s.note(rule, err.Error())
			return
		}
		raw, _ := json.Marshal(v)
		s.emit(Effect{Type: EffectReport, Kind: a.Kind, Rule: rule, Data: raw})
	case *rules.FlagAction:
		e := Effect{Type: EffectFlag, Rule: rule, Reason: a.Reason}
		if r := s.env.Reply(); r != nil {
			e.Agent, e.Text = r.Role, r.Text
		}
		s.emit(e)
	case *rules.RefuseAction:
		if s.input.checking {
			s.input.refused = &a.Turn
		}
	case *rules.RedactAction:
		if s.input.checking {
			text := s.render(&a.Text, "")
			s.input.redacted = &text
		}
	default:
		s.emit(Effect{Type: EffectEngineError, Rule: rule, Reason: "no executor for action " + describeAction(a)})
	}
}

func describeAction(a rules.Action) string {
	b, _ := json.Marshal(a)
	return string(b)
}
