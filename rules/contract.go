package rules

import "reflect"

// EachExpr calls fn with every compiled expression v holds: conditions,
// values and the expressions inside templates, actions included, found
// by the same kind of walk compile does, so no field can be missed by a
// hand-written list. v is a pointer to part of a loaded pack, such as a
// *Rule or a *Route. Expressions that did not compile are skipped;
// scripts are not expressions and are not visited.
func EachExpr(v any, fn func(x *Expr)) {
	eachExpr(reflect.ValueOf(v), fn)
}

func eachExpr(v reflect.Value, fn func(*Expr)) {
	if !v.IsValid() {
		return
	}
	switch t := v.Type(); t {
	case exprType:
		if x := v.Addr().Interface().(*Expr); x.prog != nil {
			fn(x)
		}
		return
	case valueType:
		if x := &v.Addr().Interface().(*Value).Expr; x.prog != nil {
			fn(x)
		}
		return
	case templateType:
		for _, part := range v.Addr().Interface().(*Template).parts {
			if part.expr != nil && part.expr.prog != nil {
				fn(part.expr)
			}
		}
		return
	}
	if !walked(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			eachExpr(v.Elem(), fn)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("yaml") != "-" {
				eachExpr(v.Field(i), fn)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachExpr(v.Index(i), fn)
		}
	}
}
