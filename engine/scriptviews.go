package engine

import (
	"reflect"
	"slices"

	"github.com/batonhq/baton/rules"
)

// The views a script reads as ctx.msg, ctx.candidate, ctx.session and
// ctx.floor, each a field at a time: an input check runs on every
// message, and building each view as a map, boxing every value, was most
// of what a call allocated. A view's fields are those of the expression
// view of the same name (its expr tags), so scripts and expressions read
// one list. A view reads through its call's facade, so one a script keeps
// past its call reads as empty (no keys, no fields), as the facade does.

// viewShape is a view type's fields by expr name, worked out once.
type viewShape struct {
	keys  []string       // sorted, as script.Object asks
	index map[string]int // name -> struct field
	of    func(s *Session) reflect.Value
}

func shapeOf[T any](of func(s *Session) *T) *viewShape {
	t := reflect.TypeFor[T]()
	sh := &viewShape{index: map[string]int{}, of: func(s *Session) reflect.Value { return reflect.ValueOf(of(s)).Elem() }}
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("expr"); name != "" {
			sh.keys = append(sh.keys, name)
			sh.index[name] = i
		}
	}
	slices.Sort(sh.keys)
	return sh
}

var (
	msgView       = shapeOf(func(s *Session) *rules.MessageView { return &s.env.Msg })
	candidateView = shapeOf(func(s *Session) *rules.CandidateView { return &s.env.Candidate })
	sessionView   = shapeOf(func(s *Session) *rules.SessionView { return &s.env.Session })
	floorView     = shapeOf(func(s *Session) *rules.FloorView { return &s.env.Floor })
)

// viewObject is one view during one script call.
type viewObject struct {
	f     *facade
	shape *viewShape
}

func (o viewObject) Keys() []string {
	if o.f.s == nil {
		return nil
	}
	return o.shape.keys
}

func (o viewObject) Field(k string) (any, bool) {
	i, ok := o.shape.index[k]
	if o.f.s == nil || !ok {
		return nil, false
	}
	return o.shape.of(o.f.s).Field(i).Interface(), true
}
