package describe

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteJSON writes c as indented JSON, the same bytes for the same pack.
func WriteJSON(w io.Writer, c Contract) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// WriteText writes c for a reader.
func WriteText(w io.Writer, c Contract) error {
	var b strings.Builder
	p := c.Pack
	fmt.Fprintf(&b, "pack %s: %s, human %s, voice %s\n", p.Name, clock(p.DurationMS), p.Human, p.VoiceMode)
	if p.Description != "" {
		fmt.Fprintf(&b, "  %s\n", firstLine(p.Description))
	}
	fmt.Fprintf(&b, "\ninputs (%d):\n", len(c.Inputs))
	for _, in := range c.Inputs {
		req := "optional"
		if in.Required {
			req = "required"
		}
		fmt.Fprintf(&b, "  %s  %s, %s%s\n", in.ID, in.Type, req, limits(in))
		if in.Description != "" {
			fmt.Fprintf(&b, "      %s\n", firstLine(in.Description))
		}
	}
	fmt.Fprintf(&b, "\nevents (%d):\n", len(c.Events))
	for _, ev := range c.Events {
		mark := ""
		if !ev.Accepted {
			mark = " (not accepted: no rule triggers on it)"
		}
		fmt.Fprintf(&b, "  %s  [%s]%s\n", ev.Type, strings.Join(ev.Sources, ", "), mark)
		for _, f := range ev.Data {
			var why []string
			if f.Required {
				why = append(why, "required")
			}
			if f.Engine != "" {
				why = append(why, "engine: "+f.Engine)
			}
			why = append(why, f.ReadBy...)
			fmt.Fprintf(&b, "      data.%s  %s\n", f.Name, strings.Join(why, "; "))
		}
		if len(ev.Rules) > 0 {
			fmt.Fprintf(&b, "      rules: %s\n", strings.Join(ev.Rules, ", "))
		}
		if len(ev.Scripted) > 0 {
			fmt.Fprintf(&b, "      scripts may read more: %s\n", strings.Join(ev.Scripted, ", "))
		}
	}
	for _, group := range []struct {
		name  string
		tools []Tool
	}{{"client tools", c.ClientTools}, {"server tools", c.ServerTools}} {
		fmt.Fprintf(&b, "\n%s (%d):\n", group.name, len(group.tools))
		for _, t := range group.tools {
			fmt.Fprintf(&b, "  %s", t.Name)
			if t.TimeoutMS > 0 {
				fmt.Fprintf(&b, "  timeout %s", clock(t.TimeoutMS))
			}
			b.WriteString("\n")
			if t.Description != "" {
				fmt.Fprintf(&b, "      %s\n", firstLine(t.Description))
			}
			fmt.Fprintf(&b, "      parameters: %s\n", t.Parameters)
			if ws := t.Workspace; ws != nil {
				fmt.Fprintf(&b, "      workspace %s answers {%s}; %s\n", ws.Op, strings.Join(ws.Result, ", "), ws.Note)
			}
		}
	}
	fmt.Fprintf(&b, "\neffects (%d):\n", len(c.Effects))
	for _, e := range c.Effects {
		if e.Feature == "" {
			fmt.Fprintf(&b, "  %s\n", e.Type)
		} else {
			fmt.Fprintf(&b, "  %s  (%s)\n", e.Type, e.Feature)
		}
	}
	fmt.Fprintf(&b, "\nroles (%d):\n", len(c.Roles))
	for _, r := range c.Roles {
		fmt.Fprintf(&b, "  %s  %s", r.ID, r.Name)
		for _, kv := range [][2]string{{"voice", r.Voice}, {"provider", r.Provider}, {"model", r.Model}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, ", %s %s", kv[0], kv[1])
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func limits(in Input) string {
	var l []string
	add := func(format string, args ...any) { l = append(l, fmt.Sprintf(format, args...)) }
	if in.MaxChars > 0 {
		add("max_chars %d", in.MaxChars)
	}
	if in.Min != nil {
		add("min %v", *in.Min)
	}
	if in.Max != nil {
		add("max %v", *in.Max)
	}
	if in.Whole {
		add("whole")
	}
	if len(in.Values) > 0 {
		add("values %s", strings.Join(in.Values, "|"))
	}
	if in.MaxItems > 0 {
		add("max_items %d", in.MaxItems)
	}
	if len(in.Schema) > 0 {
		add("schema %s", in.Schema)
	}
	if len(in.Media) > 0 {
		add("media %s", strings.Join(in.Media, ","))
	}
	if in.MaxFiles > 0 {
		add("max_files %d, max_bytes %d, max_total %d", in.MaxFiles, in.MaxBytes, in.MaxTotal)
	}
	if in.Default != nil {
		d, _ := json.Marshal(in.Default)
		add("default %s", d)
	}
	if len(in.DefaultFiles) > 0 {
		add("default files %s", strings.Join(in.DefaultFiles, ", "))
	}
	if len(l) == 0 {
		return ""
	}
	return "; " + strings.Join(l, ", ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func clock(ms int64) string {
	s := ms / 1000
	if ms%1000 != 0 {
		return fmt.Sprintf("%dms", ms)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
