package sim

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/rules"
	"github.com/batonhq/baton/rules/text"
	"github.com/batonhq/baton/runtime/llm"
)

func TestParseChaos(t *testing.T) {
	for _, tt := range []struct {
		spec  string
		names []string
		rate  float64
		err   string
	}{
		{spec: "chaos"},
		{spec: "chaos@0.3", rate: 0.3},
		{spec: "chaos:long,label", names: []string{"long", "label"}},
		{spec: "chaos:long,label,long@1", names: []string{"long", "label"}, rate: 1},
		{spec: "chaos:lable", err: `"lable" is not a misbehaviour (did you mean label?) (misbehaviours: rate_limit, safety`},
		{spec: "chaos:", err: `"" is not a misbehaviour`},
		{spec: "chaos@0", err: "above 0 and at most 1"},
		{spec: "chaos@x", err: "above 0 and at most 1"},
		{spec: "chaotic", err: "not a misbehaving model"},
	} {
		m, err := ParseChaos(tt.spec)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want %q", tt.spec, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.spec, err)
		case !reflect.DeepEqual(m.Names, tt.names) || m.Rate != tt.rate:
			t.Errorf("%s: %+v, want names %v rate %v", tt.spec, m, tt.names, tt.rate)
		}
	}
}

func loadPack(t *testing.T, name string) *rules.Pack {
	t.Helper()
	p, err := rules.Load(os.DirFS("../../../scenarios/"+name), ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// turn is a DayOne turn request; tools, when set, offers Hot Seat's.
func turn(role string) *engine.LLMRequest {
	return &engine.LLMRequest{Role: role, Kind: "reply", TurnGoal: "follow_up", TimeoutMS: 8000,
		CandidateLastMessage: "I would replay the webhook against staging and compare ledger entries."}
}

func misModel(p *rules.Pack, names ...string) *Model {
	m := NewModel(p, nil, -1)
	m.Misbehave(Misbehave{Names: names, Rate: 1, Seed: 7})
	return m
}

// Each misbehaviour, made certain, shows on a turn as it says.
func TestEachMisbehaviourShows(t *testing.T) {
	dayone := loadPack(t, "dayone")
	hotseat := loadPack(t, "hotseat")
	transfer := engine.ToolDecl{Name: "transfer", Parameters: json.RawMessage(`{"type":"object","properties":{"colleague":{"type":"string","enum":["priya","james"]},"reason":{"type":"string"},"summary":{"type":"string"}},"required":["colleague","reason","summary"]}`)}
	plain := NewModel(dayone, nil, -1).Answer(context.Background(), "r1", turn("qa"))
	lat := time.Duration(dayone.DryRun.LLMLatency.MS) * time.Millisecond
	for _, tt := range []struct {
		name string
		p    *rules.Pack
		req  func() *engine.LLMRequest
		ok   func(a llm.Answer) bool
	}{
		{MisLong, dayone, nil, func(a llm.Answer) bool {
			return text.CountWords(a.Result.Text) > 2000 && strings.Count(a.Result.Text, "\n\n") >= 3 && strings.HasPrefix(a.Result.Text, plain.Result.Text)
		}},
		{MisLabel, dayone, nil, func(a llm.Answer) bool {
			l, _, ok := strings.Cut(a.Result.Text, ":")
			return ok && strings.HasSuffix(a.Result.Text, plain.Result.Text) && len(l) < 30
		}},
		{MisMarkdown, dayone, nil, func(a llm.Answer) bool {
			s := a.Result.Text
			return strings.Contains(s, "###") && strings.Contains(s, "**") && strings.Contains(s, "\n- ") && strings.Contains(s, "```")
		}},
		{MisBadTools, hotseat, func() *engine.LLMRequest {
			r := turn("marcus")
			r.Tools = []engine.ToolDecl{transfer}
			return r
		}, func(a llm.Answer) bool {
			c := a.Result.ToolCalls
			return len(c) == 3 && c[0].Name == "transfer" && strings.Contains(string(c[0].Args), `"colleague":"nobody_of_that_name"`) &&
				c[1].Name == "transfer" && !strings.Contains(string(c[1].Args), "colleague") && c[2].Name == "no_such_tool"
		}},
		{MisRefusedEnd, hotseat, func() *engine.LLMRequest {
			r := turn("marcus")
			r.Tools = []engine.ToolDecl{transfer}
			return r
		}, func(a llm.Answer) bool {
			c := a.Result.ToolCalls
			return a.Result.Text == "Thank you, that concludes the panel." && len(c) > 0 && c[len(c)-1].Name == "endPanel"
		}},
		{MisTruncated, dayone, nil, func(a llm.Answer) bool {
			return a.Result.Finish == engine.FinishTruncated && strings.HasPrefix(plain.Result.Text, a.Result.Text) && len(a.Result.Text) < len(plain.Result.Text)
		}},
		{MisRateLimit, dayone, nil, func(a llm.Answer) bool {
			return a.After == 2*lat+RetryAfterMS*time.Millisecond && a.Result.Text == plain.Result.Text
		}},
		{MisRateLimit + " past the timeout", dayone, func() *engine.LLMRequest {
			r := turn("qa")
			r.TimeoutMS = 1500
			return r
		}, func(a llm.Answer) bool {
			return a.Result.Err != nil && a.Result.Err.Kind == "rate_limit" && a.Result.Text == ""
		}},
		{MisEmpty, dayone, nil, func(a llm.Answer) bool {
			return a.Result.Text == "" && a.Result.ToolCalls == nil && a.Result.Err == nil && a.Result.Finish == ""
		}},
		{MisSafety, dayone, nil, func(a llm.Answer) bool {
			return a.Result.Text == "" && a.Result.Finish == engine.FinishBlocked
		}},
		{MisOffRole, dayone, nil, func(a llm.Answer) bool {
			r, _ := dayone.Role("qa")
			return a.Result.Text != "" && r.FocusWords().Hits(a.Result.Text) == 0 && !strings.Contains(a.Result.Text, "ledger")
		}},
		{MisSlow, dayone, nil, func(a llm.Answer) bool { return a.After == SlowMS*time.Millisecond }},
		{MisSlow + " past a lead", dayone, func() *engine.LLMRequest {
			r := turn("qa")
			r.Prepare = &engine.Preparation{DueMS: 60000, LeadMS: 3000}
			return r
		}, func(a llm.Answer) bool { return a.After == 3500*time.Millisecond }},
	} {
		name := strings.Fields(tt.name)[0]
		req := turn("qa")
		if tt.req != nil {
			req = tt.req()
		}
		a := misModel(tt.p, name).Answer(context.Background(), "r1", req)
		if !tt.ok(a) {
			t.Errorf("%s: %+v after %s", tt.name, a.Result, a.After)
		}
	}
}

// An off-role model asked again about role fidelity complies about
// ComplyRate of the time, then answers the candidate's last message.
func TestOffRoleComplies(t *testing.T) {
	p := loadPack(t, "dayone")
	complied, answered := 0, 0
	const n = 200
	for seed := uint64(1); seed <= n; seed++ {
		m := NewModel(p, nil, -1)
		m.Misbehave(Misbehave{Names: []string{MisOffRole}, Seed: seed})
		req := turn("qa")
		req.Correction = &engine.Correction{Rejected: "Lovely weather.", Instruction: "Your last reply broke the panel's rules (role_fidelity).", Attempt: 1}
		a := m.Answer(context.Background(), "r1", req)
		if !slices.Contains(smallTalk, a.Result.Text) {
			complied++
		}
		if strings.Contains(a.Result.Text, "webhook") {
			answered++
		}
		// Asked again about something else, it stays off role.
		req.Correction.Instruction = "Your last reply broke the panel's rules (max_sentences)."
		if b := m.Answer(context.Background(), "r2", req); !slices.Contains(smallTalk, b.Result.Text) {
			t.Fatalf("seed %d: complied with a correction that was not about role fidelity: %q", seed, b.Result.Text)
		}
	}
	if complied < n*45/100 || complied > n*75/100 || answered != complied {
		t.Errorf("complied %d and answered %d of %d, want about %.0f%% and all of them", complied, answered, n, ComplyRate*100)
	}
}

// Same seed, same requests: same answers; another seed, other answers.
func TestMisbehaviourSeeded(t *testing.T) {
	p := loadPack(t, "dayone")
	play := func(seed uint64) []byte {
		m := NewModel(p, nil, -1)
		m.Misbehave(Misbehave{Seed: seed})
		var out []byte
		for i := 0; i < 40; i++ {
			a := m.Answer(context.Background(), "r", turn([]string{"qa", "ba", "tech_lead"}[i%3]))
			b, _ := json.Marshal(a)
			out = append(out, b...)
		}
		return out
	}
	if a, b := play(1), play(1); string(a) != string(b) {
		t.Error("the same seed gave different answers")
	}
	if a, b := play(1), play(2); string(a) == string(b) {
		t.Error("seeds 1 and 2 gave the same answers")
	}
}

// A reply's misbehave list spoils that answer; a wrong name is refused.
func TestReplyMisbehaves(t *testing.T) {
	p := loadPack(t, "dayone")
	rs, err := ReadRepliesFile("r.yaml", []byte("- {role: qa, text: \"Which logs would you pull first, and which line would confirm that the retry fired twice?\", misbehave: [label, truncated]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := NewModel(p, rs, -1).Answer(context.Background(), "r1", turn("qa"))
	if a.Result.Finish != engine.FinishTruncated || !strings.Contains(a.Result.Text, ":") {
		t.Errorf("reply with misbehave [label, truncated]: %+v", a.Result)
	}
	_, err = ReadRepliesFile("r.yaml", []byte("- {text: hi, misbehave: [markdwn]}\n"))
	if err == nil || !strings.Contains(err.Error(), `reply 1: misbehave: "markdwn" is not a misbehaviour (did you mean markdown?)`) {
		t.Errorf("misspelt misbehaviour: %v", err)
	}
}

// Jobs keep their content; only truncated, empty, rate_limit and slow
// touch them.
func TestJobsOnlyFail(t *testing.T) {
	p := loadPack(t, "hotseat")
	job := &engine.LLMRequest{Role: "brain", Job: "configure", Schema: json.RawMessage(`{"type":"object"}`), TimeoutMS: 20000}
	plain := NewModel(p, nil, -1).Answer(context.Background(), "j1", job)
	for _, n := range []string{MisLong, MisLabel, MisMarkdown, MisOffRole, MisSafety, MisBadTools, MisRefusedEnd} {
		if a := misModel(p, n).Answer(context.Background(), "j1", job); !reflect.DeepEqual(a, plain) {
			t.Errorf("%s changed a job's answer: %+v, want %+v", n, a.Result, plain.Result)
		}
	}
	a := misModel(p, MisTruncated).Answer(context.Background(), "j1", job)
	if a.Result.Finish != engine.FinishTruncated || json.Valid([]byte(a.Result.Text)) {
		t.Errorf("truncated job: %+v", a.Result)
	}
	if a := misModel(p, MisEmpty).Answer(context.Background(), "j1", job); a.Result.Text != "" || a.Result.Err != nil {
		t.Errorf("empty job: %+v", a.Result)
	}
}
