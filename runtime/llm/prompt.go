package llm

import (
	"bytes"
	"encoding/json"
	"path"
	"strconv"
	"strings"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/text"
)

// Delimiters of the turn brief appended to the persona. They are fixed
// strings so prompts can be diffed across runs and a model (or a reviewer)
// can tell the engine's per-turn instructions from the pack's persona.
const (
	BriefBegin = "=== BATON TURN BRIEF ==="
	BriefEnd   = "=== END TURN BRIEF ==="
)

// CandidateSpeaker is the transcript speaker name of the person in the
// session unless the request names another (LLMRequest.Human); every
// other speaker is a panel agent.
const CandidateSpeaker = rules.DefaultHuman

// FromTurn builds the adapter request for one engine llm_request.
//
// The system prompt is the persona followed by a delimited brief (role, turn
// goal, scenario context in pack order, output limits). The transcript tail
// becomes the conversation as the requesting role lived it: its own lines
// are its model turns, unlabelled, and everyone else's words (the person's
// and the other agents') are user messages carrying their Speaker, which
// each adapter attributes the way its vendor documents (see [Attributed]).
// Nothing the model reads as its own words starts with a speaker label, so
// it has no "name: " pattern to continue. Consecutive lines of one speaker
// merge. The last message is a user turn restating the goal and the
// candidate's newest message, so the model answers the goal rather than
// continuing the transcript. A line the role said in a tool round of this
// turn goes back once, beside its calls (see dropRoundLines). The output
// depends only on req, so a replayed session sends byte-identical
// requests. A nil req gives an empty Request.
func FromTurn(req *engine.LLMRequest) Request {
	if req == nil {
		return Request{}
	}
	out := Request{
		Provider:        req.Provider,
		Model:           req.Model,
		System:          systemPrompt(req),
		MaxOutputTokens: req.MaxTokens,
	}
	own := strings.TrimSpace(req.Role)
	for _, line := range dropRoundLines(req) {
		text := strings.TrimSpace(line.Text)
		if text == "" {
			continue
		}
		speaker := strings.TrimSpace(line.Speaker)
		switch {
		case isHuman(req, speaker):
			speaker = humanName(req)
			if line.Unclear {
				// Kept so the model knows something was said, flagged so it
				// does not read intent into a mis-transcription.
				text = "(unclear audio) " + text
			}
		case own != "" && speaker == own:
			out.Messages = appendMerged(out.Messages, Message{Role: RoleModel, Text: text})
			continue
		case speaker == "":
			speaker = "agent"
		}
		out.Messages = appendMerged(out.Messages, Message{Role: RoleUser, Speaker: speaker, Text: text})
	}
	if req.Job != "" || req.Sequence != nil {
		// A job is a task, not a line in the conversation: its rendered
		// prompt is the request, and a schema asks for JSON. A
		// sequence's call answers the exchange's prompt, with what came
		// before in the system prompt's parts.
		out.Messages = appendMerged(out.Messages, Message{Role: RoleUser, Text: strings.TrimSpace(req.Prompt)})
		last := &out.Messages[len(out.Messages)-1]
		for _, a := range req.Attachments {
			last.Blobs = append(last.Blobs, Blob{Name: a.Name, MIME: a.MIME, Data: a.Data})
		}
		out.ResponseSchema = req.Schema
		return out
	}
	out.Messages = appendMerged(out.Messages, Message{Role: RoleUser, Text: finalInstruction(req)})
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, ToolDecl{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	// Rounds of calls made earlier in this turn and their results, so the
	// model can act on a refusal (the tool loop). Each round goes back as
	// the model gave it: its text and all its calls in one model message,
	// with their signatures, then one tool message per result.
	for _, round := range req.ToolRounds {
		msg := Message{Role: RoleModel, Text: round.Text}
		for _, st := range round.Steps {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: st.Call.ID, Name: st.Call.Name, Args: st.Call.Args, Signature: st.Call.Signature})
		}
		out.Messages = append(out.Messages, msg)
		noted := !round.Withheld || strings.TrimSpace(round.Text) == ""
		for _, st := range round.Steps {
			content := st.Result
			if st.IsError && !noted {
				// The model's words went out beside its calls; that they
				// were not said is only known here.
				content, noted = notSaid(content), true
			}
			out.Messages = append(out.Messages, Message{Role: RoleTool, ToolResult: &ToolResult{CallID: st.Call.ID, Name: st.Call.Name, Content: content, IsError: st.IsError}})
		}
	}
	// A regeneration: the model sees the answer it gave as its own turn,
	// then the instruction that says what was wrong with it, and what the
	// person just said, so the new line still answers them rather than
	// only obeying the instruction.
	if c := req.Correction; c != nil {
		out.Messages = append(out.Messages,
			Message{Role: RoleModel, Text: c.Rejected},
			Message{Role: RoleUser, Text: correction(req, c)})
	}
	return out
}

// NotSaid is what a refused call's result adds when the words that came
// with it were held back: a round with a refused call is not spoken.
const NotSaid = "Nothing you wrote with these calls was said, because a call was refused. Correct the call and give your line again."

// notSaid adds NotSaid to a refusal's JSON object as "not_said", first,
// so the result stays one object whatever it held.
func notSaid(content json.RawMessage) json.RawMessage {
	c := bytes.TrimSpace(content)
	if len(c) < 2 || c[0] != '{' {
		return content
	}
	q, _ := json.Marshal(NotSaid)
	out := append([]byte(`{"not_said":`), q...)
	if rest := bytes.TrimSpace(c[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, c[1:]...)
}

// dropRoundLines is the transcript tail without the lines this turn's
// tool rounds said: the engine adds a reply's text to the transcript when
// it is spoken and keeps it in the round beside the calls. The round's
// copy stays, since a vendor pairs the calls with the text of the same
// model turn (and Gemini's thought signatures ride on those calls); the
// tail's copy goes. A round's line is the role's latest line in the tail
// that is the round's text, or a cut of it (the guardrails may shorten a
// line before it is said).
func dropRoundLines(req *engine.LLMRequest) []engine.TranscriptLine {
	tail := req.TranscriptTail
	if len(req.ToolRounds) == 0 {
		return tail
	}
	own := strings.TrimSpace(req.Role)
	drop := map[int]bool{}
	for _, round := range req.ToolRounds {
		if round.Withheld {
			continue // never said, so not in the tail
		}
		said, exact := strings.TrimSpace(round.Said), true
		if said == "" {
			// A request recorded before rounds carried the line as said.
			said, exact = strings.TrimSpace(round.Text), false
		}
		if said == "" {
			continue
		}
		for i := len(tail) - 1; i >= 0; i-- {
			text := strings.TrimSpace(tail[i].Text)
			if drop[i] || strings.TrimSpace(tail[i].Speaker) != own || text == "" {
				continue
			}
			if text == said || (!exact && (strings.HasPrefix(said, text) || strings.Contains(text, said))) {
				drop[i] = true
				break
			}
		}
	}
	if len(drop) == 0 {
		return tail
	}
	kept := make([]engine.TranscriptLine, 0, len(tail)-len(drop))
	for i, l := range tail {
		if !drop[i] {
			kept = append(kept, l)
		}
	}
	return kept
}

func isHuman(req *engine.LLMRequest, speaker string) bool {
	return strings.EqualFold(strings.TrimSpace(speaker), humanName(req))
}

func humanName(req *engine.LLMRequest) string {
	if req.Human != "" {
		return req.Human
	}
	return CandidateSpeaker
}

// appendMerged appends m, joining its text to the previous message when
// that is the same speaker's plain turn (same role, same Speaker, no
// files, calls or result): providers expect alternating turns, and
// merging keeps every line in order.
func appendMerged(msgs []Message, m Message) []Message {
	if n := len(msgs); n > 0 {
		prev := &msgs[n-1]
		if prev.Role == m.Role && prev.Speaker == m.Speaker && prev.ToolResult == nil && len(prev.ToolCalls) == 0 && len(prev.Blobs) == 0 {
			prev.Text += "\n" + m.Text
			return msgs
		}
	}
	return append(msgs, m)
}

// Attributed is the text of a user message that carries another speaker's
// words, for a vendor whose messages have no field for a participant's
// name (Gemini, Anthropic): a line of narration naming the speaker, then
// their words as a quoted block. It is not "name: words" on purpose: a
// model shown lines of that form continues the pattern and starts its own
// answer with a label, which a voice then reads aloud. Quoting every line
// keeps a multi-line message from passing for narration of its own. An
// empty speaker gives the text unchanged.
func Attributed(speaker, text string) string {
	speaker = strings.Join(strings.Fields(speaker), " ")
	if speaker == "" {
		return text
	}
	return "(" + speaker + " said)\n> " + strings.ReplaceAll(text, "\n", "\n> ")
}

// DefaultAssembly is the order of the system prompt's parts when the pack
// declares none (llm.assembly).
var DefaultAssembly = []string{"persona", "role", "goal", "context", "constraints"}

// systemPrompt lays out the persona and the turn brief in the order the
// pack declares; parts left out of the order are left out of the prompt.
// Brief parts sit between BriefBegin and BriefEnd so a model (or a
// reviewer) can tell the engine's per-turn instructions from the persona.
func systemPrompt(req *engine.LLMRequest) string {
	order := req.Assembly
	if len(order) == 0 {
		order = DefaultAssembly
	}
	var b strings.Builder
	inBrief := false
	open := func(brief bool) {
		switch {
		case brief && !inBrief:
			b.WriteString(BriefBegin)
			b.WriteString("\n")
		case !brief && inBrief:
			b.WriteString(BriefEnd)
			b.WriteString("\n\n")
		}
		inBrief = brief
	}
	for _, part := range order {
		switch part {
		case "persona":
			if s := strings.TrimSpace(req.System); s != "" {
				open(false)
				b.WriteString(s)
				b.WriteString("\n\n")
			}
		case "role":
			open(true)
			field(&b, "Your role", req.Role)
			field(&b, "Turn kind", req.Kind)
		case "goal":
			open(true)
			field(&b, "Turn goal", req.TurnGoal)
		case "context":
			if len(req.ScenarioContext) > 0 {
				open(true)
				b.WriteString("Scenario context:\n")
				for _, kv := range req.ScenarioContext {
					b.WriteString("- ")
					b.WriteString(oneBlock(kv.Key))
					b.WriteString(": ")
					b.WriteString(oneBlock(kv.Value))
					b.WriteString("\n")
				}
			}
		case "constraints":
			open(true)
			b.WriteString("Constraints:\n")
			if n := req.Constraints.MaxSentences; n > 0 {
				b.WriteString("- Use at most " + strconv.Itoa(n) + " " + text.Plural(n, "sentence", "sentences") + ".\n")
			}
			if n := req.Constraints.MaxWords; n > 0 {
				b.WriteString("- Keep it under " + strconv.Itoa(n) + " words: it is spoken aloud.\n")
			}
			if n := req.Constraints.MaxQuestionCount; n > 0 {
				b.WriteString("- Ask at most " + strconv.Itoa(n) + " " + text.Plural(n, "question", "questions") + ".\n")
			}
			b.WriteString("- Reply with only the words you say aloud: no speaker label, no stage directions.\n")
		default:
			// A context file: what the role knows, laid out where the
			// pack's assembly puts it, tagged with its path so the model
			// can tell one document from the next.
			for _, f := range req.Files {
				if path.Base(f.Path) != part || f.Text == "" { // cut to nothing by the budget
					continue
				}
				open(false)
				b.WriteString("<file path=\"" + f.Path + "\">\n")
				b.WriteString(fileBody.Replace(strings.TrimRight(f.Text, "\n")))
				b.WriteString("\n</file>\n\n")
			}
		}
	}
	if inBrief {
		b.WriteString(BriefEnd)
	}
	return strings.TrimRight(b.String(), "\n")
}

// fileBody keeps a context file's text from closing its tag or passing
// for the turn brief: a file can hold what the candidate said, word for
// word.
var fileBody = strings.NewReplacer("</file", "< /file", "</FILE", "< /FILE", "</File", "< /File", BriefBegin, "(turn brief marker)", BriefEnd, "(turn brief marker)")

func field(b *strings.Builder, name, value string) {
	if value = strings.TrimSpace(value); value == "" {
		return
	}
	b.WriteString(name)
	b.WriteString(": ")
	b.WriteString(oneBlock(value))
	b.WriteString("\n")
}

// oneBlock indents continuation lines so a multi-line value cannot pass for
// a new field or for the end delimiter.
func oneBlock(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "\n") {
		return s
	}
	return strings.ReplaceAll(s, "\n", "\n  ")
}

func finalInstruction(req *engine.LLMRequest) string {
	var b strings.Builder
	b.WriteString("[Turn goal: ")
	if g := strings.TrimSpace(req.TurnGoal); g != "" {
		b.WriteString(oneBlock(g))
	} else {
		b.WriteString("continue the interview")
	}
	b.WriteString("]\n")
	who := humanName(req)
	if last := strings.TrimSpace(req.CandidateLastMessage); last != "" {
		b.WriteString("[" + strings.ToUpper(who[:1]) + who[1:] + "'s last message: ")
		b.WriteString(oneBlock(last))
		b.WriteString("]")
	} else {
		b.WriteString("[The " + who + " has not said anything yet.]")
	}
	return b.String()
}

// correction is the user turn that asks for a line again: the
// guardrails' instruction, then the person's newest message as one
// block, so the line that comes back still answers it.
func correction(req *engine.LLMRequest, c *engine.Correction) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(c.Instruction))
	who := humanName(req)
	if last := strings.TrimSpace(req.CandidateLastMessage); last != "" {
		b.WriteString("\n[Your line must still answer the " + who + "'s last message: ")
		b.WriteString(oneBlock(last))
		b.WriteString("]")
	}
	return b.String()
}
